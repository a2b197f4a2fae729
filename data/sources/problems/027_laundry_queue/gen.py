def fmt(bags):
    return f"{len(bags)}\n" + "".join(f"{t} {w}\n" for t, w in bags)


def rand_bags(rng, n, tmax, wmax):
    return [(rng.randint(1, tmax), rng.randint(1, wmax)) for _ in range(n)]


def generate(rng):
    public = [fmt([(3, 1), (1, 1), (2, 5)])]
    private = [
        fmt([(7, 3)]),
        fmt([(5, 1), (1, 5), (3, 3), (2, 2)]),
        fmt(rand_bags(rng, 6, 10, 10)),
        fmt(rand_bags(rng, 7, 100, 100)),
        fmt([(4, 4)] * 8),
        fmt(rand_bags(rng, 10**4, 10**4, 10**4)),
        fmt([(10**4, 10**4)] * 10**4),
        fmt([(rng.randint(1, 10), rng.randint(9000, 10**4)) for _ in range(5000)]
            + [(rng.randint(9000, 10**4), rng.randint(1, 10)) for _ in range(5000)]),
    ]
    generated = [fmt(rand_bags(rng, rng.randint(1, 2000), 50, 50)) for _ in range(2)]
    return {"public": public, "private": private, "generated": generated}
