MAXN = 2 * 10**5


def fmt(qs):
    return f"{len(qs)}\n" + "".join(f"{n} {k}\n" for n, k in qs)


def generate(rng):
    public = [fmt([(4, 2), (5, 2), (6, 3), (7, 4)])]
    small = [(n, k) for n in range(3, 13) for k in range(0, n + 1)]
    private = [
        fmt([(3, 0), (3, 1), (3, 2), (3, 3)]),
        fmt(small),
        fmt([(n, rng.randint(0, n // 2 + 1)) for n in (rng.randint(3, 60) for _ in range(200))]),
        fmt([(MAXN, 0), (MAXN, 1), (MAXN, MAXN // 2), (MAXN, MAXN // 2 + 1), (MAXN - 1, (MAXN - 1) // 2),
             (MAXN, 40000), (MAXN, MAXN)]),
        fmt([(n, rng.randint(0, n // 2)) for n in (rng.randint(100000, MAXN) for _ in range(5000))]),
        fmt([(n, rng.randint(0, n)) for n in (rng.randint(3, MAXN) for _ in range(5000))]),
    ]
    generated = [fmt([(n, rng.randint(0, n // 2)) for n in (rng.randint(3, 1000) for _ in range(100))])]
    return {"public": public, "private": private, "generated": generated}
