def fmt(tasks):
    return f"{len(tasks)}\n" + "".join(f"{t} {d}\n" for t, d in tasks)


def rand_tasks(rng, n, tmax, dmax):
    return [(rng.randint(1, tmax), rng.randint(1, dmax)) for _ in range(n)]


def generate(rng):
    public = [fmt([(3, 3), (2, 4), (2, 5), (4, 8)])]
    private = [
        fmt([(5, 4)]),
        fmt([(4, 4)]),
        fmt([(2, 2), (1, 3), (3, 3)]),
        fmt([(5, 5), (1, 5), (1, 5), (1, 5), (2, 6)]),
        fmt(rand_tasks(rng, 8, 10, 30)),
        fmt(rand_tasks(rng, 12, 20, 60)),
        fmt(rand_tasks(rng, 14, 50, 200)),
        fmt(rand_tasks(rng, 10**4, 10**5, 2 * 10**8)),
        fmt([(10**5, 10**9)] * 3000),
        fmt([(rng.randint(1, 100), rng.randint(1, 10**5)) for _ in range(10**4)]),
    ]
    generated = [fmt(rand_tasks(rng, 300, 100, 5000)) for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
