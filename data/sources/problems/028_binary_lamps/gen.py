LIM = 10**17


def fmt(qs):
    return f"{len(qs)}\n" + "".join(f"{l} {r}\n" for l, r in qs)


def rand_q(rng, hi):
    a, b = rng.randint(0, hi), rng.randint(0, hi)
    return (min(a, b), max(a, b))


def generate(rng):
    public = [fmt([(1, 5), (0, 0), (13, 13)])]
    private = [
        fmt([(0, 0), (1, 1), (0, 1), (2, 2), (7, 8)]),
        fmt([rand_q(rng, 1000) for _ in range(50)]),
        fmt([(0, 10**6), (123456, 7654321), (999999, 1000000)]),
        fmt([(0, LIM), (LIM, LIM), (1, LIM), (2**56 - 1, 2**56), (2**56, LIM), (LIM - 1, LIM)]),
        fmt([(2**k - 1, 2**k) for k in range(1, 57)] + [(0, 2**k - 1) for k in range(1, 57)]),
        fmt([rand_q(rng, LIM) for _ in range(3000)]),
        fmt([(rng.randint(0, 10), LIM - rng.randint(0, 10)) for _ in range(3000)]),
    ]
    generated = [fmt([rand_q(rng, 10**9) for _ in range(500)]), fmt([rand_q(rng, 10**12) for _ in range(500)])]
    return {"public": public, "private": private, "generated": generated}
