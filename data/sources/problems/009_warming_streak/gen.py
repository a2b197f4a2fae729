def case(ts):
    return f"{len(ts)}\n" + " ".join(map(str, ts)) + "\n"


def generate(rng):
    public = [case([3, -2, 0, 4, 4, 5, 6, 7, 1])]
    private = [
        case([5]),
        case([7, 7, 7, 7]),
        case([5, 4, 3, 2, 1]),
        case([1, 2, 2, 3, 4, 5, 6]),
        case([rng.randint(-5, 5) for _ in range(30)] + list(range(-100, 101))),
        case([rng.randint(-100, 100) for _ in range(30000)]),
        case([-100 + i % 201 for i in range(30000)]),
        case([0] * 30000),
    ]
    generated = [case([rng.randint(-3, 3) for _ in range(rng.randint(1, 500))]) for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
