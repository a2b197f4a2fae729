def case(rows):
    return f"{len(rows)} {len(rows[0])}\n" + "".join(r + "\n" for r in rows)


def pillar_pairs(rng, n, m, pairs):
    g = [["."] * m for _ in range(n)]
    for _ in range(pairs):
        i, j = rng.randrange(n), rng.randrange(m)
        if j + 1 < m and rng.random() < 0.5:
            g[i][j] = g[i][j + 1] = "#"
        elif i + 1 < n:
            g[i][j] = g[i + 1][j] = "#"
    return ["".join(r) for r in g]


def generate(rng):
    public = [case(["....", ".#..", "...#"])]
    private = [
        case(["."]),
        case(["#"]),
        case([".."]),
        case(["#.", ".#"]),
        case(["...", "...", "..."]),
        case(["....", "....", "....", "...."]),
        case([".#.", "...", ".#."]),
    ]
    for _ in range(3):
        n, m = 2 * rng.randint(1, 3), rng.randint(2, 5)
        private.append(case(pillar_pairs(rng, n, m, rng.randint(0, 3))))
    private.append(case(["." * 10] * 300))
    private.append(case(pillar_pairs(rng, 300, 10, 60)))
    private.append(case(pillar_pairs(rng, 298, 9, 30)))
    generated = [
        case(pillar_pairs(rng, 300, 10, 200)),
        case(["#" * 10] * 300),
        case(["." * 8] * 200),
        case(pillar_pairs(rng, 40, 10, 5)),
    ]
    return {"public": public, "private": private, "generated": generated}
