def case(ps, bs):
    return f"{len(ps)} {len(bs)}\n" + " ".join(map(str, ps)) + "\n" + " ".join(map(str, bs)) + "\n"


def generate(rng):
    public = [case([30, 5, 12, 30, 7], [10, 30, 4, 100])]
    private = [
        case([1], [1]),
        case([5], [4]),
        case([3, 3, 3], [2, 3, 1000000]),
        case([rng.randint(1, 50) for _ in range(40)], [rng.randint(1, 60) for _ in range(40)]),
        case([rng.randint(1, 10**6) for _ in range(10**4)], [rng.randint(1, 10**6) for _ in range(10**4)]),
        case([10**6] * 3000, [10**6 - 1, 10**6] * 1500),
    ]
    generated = [
        case([rng.randint(1, 1000) for _ in range(500)], [rng.randint(1, 1000) for _ in range(500)]),
    ]
    return {"public": public, "private": private, "generated": generated}
