def fmt(k, printers):
    lines = [f"{len(printers)} {k}"] + [f"{t} {c} {r}" for t, c, r in printers]
    return "\n".join(lines) + "\n"


def rand_printers(rng, n, tmax, cmax, rmax):
    return [(rng.randint(1, tmax), rng.randint(1, cmax), rng.randint(0, rmax)) for _ in range(n)]


def generate(rng):
    public = [fmt(7, [(2, 3, 5), (3, 10, 1)])]
    private = [
        fmt(1, [(1, 1, 0)]),
        fmt(5, [(4, 2, 3)]),
        fmt(10, [(1, 3, 0), (2, 1, 7)]),
        fmt(rng.randint(20, 60), rand_printers(rng, 4, 10, 5, 10)),
        fmt(rng.randint(50, 200), rand_printers(rng, 6, 20, 8, 30)),
        # a single very slow printer: the answer is close to 2 * 10^18
        fmt(10**9, [(10**9, 1, 10**9)]),
        # many very fast printers and one slow one: page counts overflow 64 bits unless capped
        fmt(10**9, [(1, 10**9, 0)] * 1999 + [(10**9, 10**9, 10**9)]),
        fmt(10**9, rand_printers(rng, 2000, 10**9, 10**9, 10**9)),
        fmt(10**9, rand_printers(rng, 2000, 1000, 1000, 10**9)),
        fmt(999999999, [(10**9, 10**9, 10**9)] * 2000),
    ]
    generated = [
        fmt(rng.randint(1, 10**9), rand_printers(rng, rng.randint(1, 300), 10**6, 100, 10**6))
        for _ in range(3)
    ]
    return {"public": public, "private": private, "generated": generated}
