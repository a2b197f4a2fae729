LIM = 10**18


def fmt(N, k, fixed):
    return f"{N} {k} {len(fixed)}\n" + "".join(f"{p} {c}\n" for p, c in fixed)


def rand_fixed(rng, N, k, m):
    pos = set()
    while len(pos) < m:
        pos.add(rng.randint(1, N))
    return [(p, rng.randint(1, k)) for p in sorted(pos)]


def generate(rng):
    public = [fmt(6, 3, [(2, 1), (5, 2)])]
    private = [
        fmt(1, 1, []),
        fmt(1, 5, [(1, 3)]),
        fmt(2, 1, []),
        fmt(3, 1, [(2, 1)]),
        fmt(4, 2, [(1, 1), (4, 1)]),
        fmt(4, 2, [(1, 1), (4, 2)]),
        fmt(5, 3, [(2, 2), (3, 2)]),
        fmt(7, 4, rand_fixed(rng, 7, 4, 3)),
        fmt(30, 3, rand_fixed(rng, 30, 3, 6)),
        fmt(1000, 10**9, rand_fixed(rng, 1000, 5, 20)),
        fmt(LIM, 10**9, []),
        fmt(LIM, 2, [(1, 1), (LIM, 2)]),
        fmt(LIM, 10**9, rand_fixed(rng, LIM, 3, 5000)),
        fmt(LIM, 7, rand_fixed(rng, LIM, 7, 5000)),
        fmt(LIM - 1, 1000000006 - 999999, [(p, 1) for p in range(1, 10**4, 2)]),
    ]
    generated = []
    for _ in range(2):
        N, k = rng.randint(1000, 10**6), rng.randint(2, 10)
        generated.append(fmt(N, k, rand_fixed(rng, 1000, min(k, 3), 50)))
    return {"public": public, "private": private, "generated": generated}
