def case(a):
    return f"{len(a)}\n" + " ".join(map(str, a)) + "\n"


def generate(rng):
    public = [case([1, 2, 3, 4, 6])]
    private = [
        case([1, 1]),
        case([1, 2]),
        case([3, 6, 9]),
        case([rng.randint(1, 10**9) for _ in range(300)]),
        case([3] * 70000),
        case([rng.choice((1, 2, 3, 4, 5, 6, 7, 8, 9)) for _ in range(70000)]),
    ]
    generated = [
        case([rng.randint(1, 10**9) for _ in range(5000)]),
        case([rng.choice((1, 4, 7)) for _ in range(1000)] + [2] * 1000),
    ]
    return {"public": public, "private": private, "generated": generated}
