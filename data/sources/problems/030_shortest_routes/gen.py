def fmt(n, edges):
    return f"{n} {len(edges)}\n" + "".join(f"{u} {v}\n" for u, v in edges)


def relabel(rng, n, edges, keep_ends=True):
    perm = list(range(1, n + 1))
    if keep_ends:
        mid = perm[1:-1]
        rng.shuffle(mid)
        perm = [1] + mid + [n]
    mp = {i + 1: perm[i] for i in range(n)}
    out = [(mp[u], mp[v]) if rng.random() < 0.5 else (mp[v], mp[u]) for u, v in edges]
    rng.shuffle(out)
    return out


def random_graph(rng, n, m):
    seen = set()
    edges = []
    while len(edges) < m:
        u, v = rng.randint(1, n), rng.randint(1, n)
        if u == v or (min(u, v), max(u, v)) in seen:
            continue
        seen.add((min(u, v), max(u, v)))
        edges.append((u, v))
    return edges


def layered(rng, layers, width):
    # vertex 1, then `layers` layers of `width` vertices, then vertex n; full bipartite between layers
    n = 2 + layers * width
    def vid(layer, j):
        return 2 + layer * width + j
    edges = [(1, vid(0, j)) for j in range(width)]
    for l in range(layers - 1):
        for a in range(width):
            for b in range(width):
                edges.append((vid(l, a), vid(l + 1, b)))
    # vertex ids: last layer to n
    edges += [(vid(layers - 1, j), n) for j in range(width)]
    return n, relabel(rng, n, edges)


def generate(rng):
    public = [fmt(5, [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (2, 3)])]
    private = [
        fmt(2, [(1, 2)]),
        fmt(2, []),
        fmt(4, [(1, 2), (3, 4)]),
        fmt(6, [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (4, 6), (5, 6), (2, 3)]),
        fmt(8, random_graph(rng, 8, 14)),
        fmt(30, random_graph(rng, 30, 60)),
    ]
    n, e = layered(rng, 48, 14)
    private.append(fmt(n, e))
    path = [(i, i + 1) for i in range(1, 3000)]
    private.append(fmt(3000, relabel(rng, 3000, path)))
    private.append(fmt(10**4, random_graph(rng, 10**4, 10**4)))
    n, e = layered(rng, 400, 2)
    private.append(fmt(n, e))
    generated = [fmt(200, random_graph(rng, 200, 600)), fmt(1000, random_graph(rng, 1000, 1500))]
    return {"public": public, "private": private, "generated": generated}
