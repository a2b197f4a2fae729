def case(h, w, cells):
    return f"{h} {w} {len(cells)}\n" + "".join(f"{r} {c}\n" for r, c in cells)


def rand_cells(rng, h, w, k):
    seen = {(1, 1), (h, w)}
    out = []
    while len(out) < k:
        cell = (rng.randint(1, h), rng.randint(1, w))
        if cell not in seen:
            seen.add(cell)
            out.append(cell)
    return out


def chain(rng, h, w, k):
    xs = sorted(rng.sample(range(2, h), k))
    ys = sorted(rng.sample(range(2, w), k))
    cells = list(zip(xs, ys))
    rng.shuffle(cells)
    return cells


def generate(rng):
    public = [case(3, 4, [(2, 2), (2, 3)])]
    private = [
        case(1, 3, [(1, 2)]),
        case(1, 5, [(1, 2), (1, 4)]),
        case(2, 2, [(1, 2), (2, 1)]),
        case(3, 3, [(1, 2), (2, 2), (2, 1)]),
        case(4, 4, [(2, 1), (2, 2), (2, 3), (2, 4)]),
    ]
    for _ in range(3):
        h, w = rng.randint(2, 9), rng.randint(2, 9)
        private.append(case(h, w, rand_cells(rng, h, w, rng.randint(1, min(15, h * w - 2)))))
    private.append(case(100000, 100000, chain(rng, 100000, 100000, 800)))
    private.append(case(100000, 100000, rand_cells(rng, 100000, 100000, 800)))
    # a wall across the whole grid: every route meets it
    wall = [(50000, c) for c in range(1, 401)] + [(r, 400) for r in range(49601, 50000)] + [(1, 2)]
    private.append(case(100000, 400, wall))
    generated = [
        case(100000, 1, [(r, 1) for r in rng.sample(range(2, 100000), 800)]),
        case(99999, 100000, rand_cells(rng, 500, 500, 800)),
        case(2000, 3000, chain(rng, 2000, 3000, 800)),
    ]
    return {"public": public, "private": private, "generated": generated}
