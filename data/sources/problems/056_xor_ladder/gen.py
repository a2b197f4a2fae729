def case(a, ks):
    return f"{len(a)} {len(ks)}\n" + " ".join(map(str, a)) + "\n" + " ".join(map(str, ks)) + "\n"


def queries(rng, n, q):
    top = min(2**n, 10**18)
    ks = [1, top] + [rng.randint(1, top) for _ in range(q - 2)]
    return ks[:q]


def generate(rng):
    public = [case([5, 3, 6], [2, 3, 5, 8])]
    private = [
        case([0], [1, 2]),
        case([7], [1, 2]),
        case([1, 1, 1], [1, 2, 3, 4, 5, 6, 7, 8]),
        case([1, 2, 4, 8], list(range(1, 17))),
    ]
    for _ in range(3):
        n = rng.randint(2, 12)
        a = [rng.randrange(rng.choice([4, 64, 2**60])) for _ in range(n)]
        private.append(case(a, queries(rng, n, 20)))
    # many crystals, low rank: huge multiplicities (2^(n - r) does not fit in 64 bits)
    a = [rng.randrange(2**20) for _ in range(3000)]
    private.append(case(a, queries(rng, 3000, 3000)))
    # full rank 60 and n slightly above 60
    a = [rng.randrange(2**60) for _ in range(64)]
    private.append(case(a, queries(rng, 64, 1500)))
    # values built from a few random vectors
    base = [rng.randrange(2**60) for _ in range(45)]
    a = []
    for _ in range(80):
        x = 0
        for v in base:
            if rng.random() < 0.5:
                x ^= v
        a.append(x)
    private.append(case(a, queries(rng, 80, 1000)))
    generated = [
        case([rng.randrange(2**60) for _ in range(50)], queries(rng, 50, 300)),
        case([2**59] * 40 + [2**59 - 1], queries(rng, 41, 200)),
    ]
    return {"public": public, "private": private, "generated": generated}
