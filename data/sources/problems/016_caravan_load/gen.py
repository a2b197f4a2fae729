def case(d, w):
    return f"{len(w)} {d}\n" + " ".join(map(str, w)) + "\n"


def generate(rng):
    public = [case(3, [4, 8, 2, 5, 1, 7])]
    private = [
        case(1, [1]),
        case(1, [5, 5, 5]),
        case(3, [5, 5, 5]),
        case(2, [1, 1, 1, 100]),
        case(4, [rng.randint(1, 20) for _ in range(15)]),
        case(7, [rng.randint(1, 1000) for _ in range(100)]),
        case(1, [rng.randint(1, 10**6) for _ in range(2000)]),
        case(5000, [rng.randint(1, 10**6) for _ in range(5000)]),
        case(37, [rng.randint(1, 10**6) for _ in range(20000)]),
        case(2, [10**6] * 2999 + [1]),
    ]
    generated = [case(rng.randint(1, 50), [rng.randint(1, 10**4) for _ in range(300)]) for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
