def fmt(n, ops):
    return f"{n} {len(ops)}\n" + "".join(" ".join(map(str, op)) + "\n" for op in ops)


def rand_ops(rng, n, q, span, weights=(1, 1, 1)):
    ops = []
    for _ in range(q):
        kind = rng.choices((1, 2, 3), weights)[0]
        if kind == 1:
            ops.append((1, rng.randint(1, n), rng.randint(1, n)))
        elif kind == 2:
            l = rng.randint(1, n)
            r = min(n, l + rng.randint(0, span))
            ops.append((2, l, r))
        else:
            ops.append((3, rng.randint(1, n)))
    return ops


def generate(rng):
    N = 2 * 10**5
    public = [fmt(8, [(2, 2, 4), (3, 3), (1, 4, 7), (3, 2), (2, 6, 8), (3, 5)])]
    private = [
        fmt(1, [(3, 1), (2, 1, 1), (1, 1, 1), (3, 1)]),
        fmt(5, [(2, 1, 5), (3, 3), (2, 2, 4), (3, 1)]),
        fmt(10, rand_ops(rng, 10, 30, 4)),
        fmt(100, rand_ops(rng, 100, 200, 20)),
        fmt(6000, [(2, 1, 5000), (3, 1), (3, 5001), (1, 5001, 6000), (3, 1)]),
        fmt(N, [(2, 1, N)] * 8000 + [(3, rng.randint(1, N)) for _ in range(1000)]),
        fmt(N, rand_ops(rng, N, 6000, N // 2, (1, 2, 3))),
        fmt(N, [(2, l, min(N, l + 150000)) for l in (rng.randint(1, 50000) for _ in range(6000))]
            + [(3, rng.randint(1, N)) for _ in range(500)]),
        fmt(N, rand_ops(rng, N, 4000, 3, (5, 1, 4))),
    ]
    generated = [fmt(1000, rand_ops(rng, 1000, 500, rng.randint(1, 100))) for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
