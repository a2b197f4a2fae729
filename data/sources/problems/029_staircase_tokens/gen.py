LIM = 10**18


def fmt(qs):
    return f"{len(qs)}\n" + "".join(f"{l} {r}\n" for l, r in qs)


def rand_q(rng, hi):
    a, b = rng.randint(1, hi), rng.randint(1, hi)
    return (min(a, b), max(a, b))


def tri(m):
    return m * (m + 1) // 2


def generate(rng):
    public = [fmt([(1, 10), (4, 6), (7, 7)])]
    boundary = []
    for _ in range(300):
        m = rng.randint(1, 1414213561)
        for x in (tri(m) - 1, tri(m), tri(m) + 1):
            if 1 <= x <= LIM:
                boundary.append((x, x))
                boundary.append((1, x))
    private = [
        fmt([(1, 1), (1, 2), (2, 3), (1, 3), (3, 3)]),
        fmt([rand_q(rng, 100) for _ in range(100)]),
        fmt([rand_q(rng, 10**6) for _ in range(100)]),
        fmt([(1, LIM), (LIM, LIM), (LIM - 1, LIM), (tri(1414213561), LIM), (tri(1414213562) - 1, tri(1414213562) - 1)]),
        fmt(boundary),
        fmt([rand_q(rng, LIM) for _ in range(4000)]),
    ]
    generated = [fmt([rand_q(rng, 10**12) for _ in range(200)]), fmt([rand_q(rng, 10**15) for _ in range(200)])]
    return {"public": public, "private": private, "generated": generated}
