def grid_case(rows):
    return f"{len(rows)} {len(rows[0])}\n" + "".join(row + "\n" for row in rows)


def random_grid(rng, r, c, p_rock, p_ice):
    g = [[rng.choices(".#*", [1 - p_rock - p_ice, p_rock, p_ice])[0] for _ in range(c)] for _ in range(r)]
    cells = rng.sample(range(r * c), 2)
    (a, b) = divmod(cells[0], c)
    (x, y) = divmod(cells[1], c)
    g[a][b] = "S"
    g[x][y] = "T"
    return ["".join(row) for row in g]


def serpentine(r, c, ice_every):
    g = []
    for i in range(r):
        if i % 2 == 0:
            row = ["."] * c
            for j in range(0, c, ice_every):
                if 0 < j < c - 1:
                    row[j] = "*"
        else:
            row = ["#"] * c
            row[c - 1 if (i // 2) % 2 == 0 else 0] = "."
        g.append(row)
    g[0][0] = "S"
    last = r - 1 if (r - 1) % 2 == 0 else r - 2
    g[last][c - 1 if (last // 2) % 2 == 1 else 0] = "T"
    return ["".join(row) for row in g]


def generate(rng):
    public = [grid_case(["S..*..", ".##*#.", "...*..", "#.#*##", "..*..T"])]
    private = [
        grid_case(["ST"]),
        grid_case(["S", "*", "T"]),
        grid_case(["S#T"]),
        grid_case(["S*", "*T"]),
        grid_case(["S..", "**.", "T.."]),
        grid_case(["S.*", "..*", "*.T"]),
    ]
    for _ in range(4):
        private.append(grid_case(random_grid(rng, rng.randint(2, 8), rng.randint(2, 8), 0.25, 0.3)))
    private.append(grid_case(serpentine(249, 250, 7)))
    private.append(grid_case(random_grid(rng, 250, 250, 0.2, 0.35)))
    generated = []
    for _ in range(5):
        generated.append(grid_case(random_grid(rng, rng.randint(5, 30), rng.randint(5, 30), rng.random() * 0.4, rng.random() * 0.5)))
    generated.append(grid_case(random_grid(rng, 250, 250, 0.05, 0.6)))
    walled = [list(row) for row in random_grid(rng, 120, 250, 0.1, 0.3)]
    for i in range(120):
        for j in range(250):
            if walled[i][j] == "T":
                walled[i][j] = "."
    walled[60][125] = "T"
    for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        walled[60 + di][125 + dj] = "#"
    if not any("S" in row for row in walled):
        walled[0][0] = "S"
    generated.append(grid_case(["".join(row) for row in walled]))
    return {"public": public, "private": private, "generated": generated}
