def case(t):
    return f"{len(t)}\n" + " ".join(map(str, t)) + "\n"


def generate(rng):
    public = [case([3, 1, 1, 4, -2, 0, 4, 2])]
    private = [
        case([7]),
        case([5, 5]),
        case([-50, 50]),
        case([50, 49, 48, 47, 46, 50, 51]),
        case([rng.randint(-3, 3) for _ in range(40)]),
        case([rng.randint(-50, 50) for _ in range(2000)]),
        case([0] * 20000),
        case([50 - i // 200 for i in range(20000)]),
        case([rng.randint(-50, 50) for _ in range(20000)]),
    ]
    generated = [case([rng.randint(-10, 10) for _ in range(rng.randint(1, 1000))]) for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
