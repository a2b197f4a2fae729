def fmt(n, edges):
    return f"{n} {len(edges)}\n" + "".join(f"{u} {v} {w}\n" for u, v, w in edges)


def random_graph(rng, n, m, wmax):
    edges = []
    for _ in range(m):
        u = rng.randint(1, n)
        v = rng.randint(1, n - 1)
        if v >= u:
            v += 1
        edges.append((u, v, rng.randint(1, wmax)))
    return edges


def chain(rng, n, wmax):
    perm = list(range(2, n))
    rng.shuffle(perm)
    order = [1] + perm + [n]
    edges = [(order[i], order[i + 1], rng.randint(wmax // 2, wmax)) for i in range(n - 1)]
    rng.shuffle(edges)
    return edges


def generate(rng):
    public = [fmt(4, [(1, 2, 5), (2, 4, 5), (1, 3, 2), (3, 4, 9)])]
    private = [
        fmt(2, [(1, 2, 1)]),
        fmt(2, []),
        fmt(3, [(1, 2, 7), (2, 1, 3), (2, 3, 1)]),
        fmt(5, [(1, 2, 4), (2, 3, 4), (3, 5, 4), (1, 4, 1), (4, 5, 13)]),
        fmt(4, [(1, 2, 3), (3, 4, 3)]),
        fmt(10, random_graph(rng, 10, 20, 20)),
        fmt(50, random_graph(rng, 50, 120, 1000)),
        fmt(8001, chain(rng, 8001, 10**6)),
        fmt(4000, random_graph(rng, 4000, 8000, 10**6)),
        fmt(10**4, random_graph(rng, 10**4, 4000, 3) + [(rng.randint(1, 10**4), 10**4, 2) for _ in range(3)]),
    ]
    generated = [fmt(300, random_graph(rng, 300, 700, 10**4)) for _ in range(2)]
    return {"public": public, "private": private, "generated": generated}
