def case(n, edges):
    return f"{n} {len(edges)}\n" + "".join(f"{u} {v}\n" for u, v in edges)


def random_edges(rng, n, m):
    out = []
    for _ in range(m):
        u = rng.randint(1, n)
        v = rng.randint(1, n - 1)
        out.append((u, v if v < u else v + 1))
    return out


def generate(rng):
    public = [case(7, [(1, 2), (2, 3), (3, 1), (4, 5), (6, 5)])]
    private = [
        case(1, []),
        case(2, []),
        case(2, [(1, 2), (2, 1), (1, 2)]),
        case(5, [(1, 2), (3, 4)]),
        case(30, random_edges(rng, 30, 20)),
        case(500, [(i, i + 1) for i in range(1, 500)]),
        case(100000, [(1, i) for i in range(2, 10002)]),
        case(100000, [(i, i + 1) for i in range(1, 10001)]),
        case(2000, random_edges(rng, 2000, 1990)),
        case(100000, random_edges(rng, 100000, 10000)),
    ]
    generated = [case(200, random_edges(rng, 200, 150)), case(3000, random_edges(rng, 3000, 2999))]
    return {"public": public, "private": private, "generated": generated}
