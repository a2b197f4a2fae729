def case(rows):
    return f"{len(rows)} {len(rows[0])}\n" + "\n".join(rows) + "\n"


def random_grid(rng, n, m, density):
    g = [["#" if rng.random() < density else "." for _ in range(m)] for _ in range(n)]
    cells = rng.sample(range(n * m), 2)
    g[cells[0] // m][cells[0] % m] = "S"
    g[cells[1] // m][cells[1] % m] = "E"
    return ["".join(r) for r in g]


def snake(n, m):
    # walls on every other row with a gap alternating between the right and the left end
    g = [["."] * m for _ in range(n)]
    for r in range(1, n, 2):
        for c in range(m):
            g[r][c] = "#"
        g[r][m - 1 if (r // 2) % 2 == 0 else 0] = "."
    g[0][0] = "S"
    g[n - 1][0 if ((n - 2) // 2) % 2 == 0 else m - 1] = "E"
    return ["".join(r) for r in g]


def generate(rng):
    public = [case(["S.#..", ".##.#", "...#E", ".#..."])]
    private = [
        case(["SE"]),
        case(["S", "#", "E"]),
        case(["S#E"]),
        case(["S...", "###.", "E..."]),
        case(random_grid(rng, 8, 9, 0.3)),
        case(random_grid(rng, 30, 30, 0.25)),
        case(snake(299, 300)),
        case(random_grid(rng, 300, 300, 0.3)),
        case(["S" + "." * 298 + "#"] + ["." * 299 + "#"] * 298 + ["#" * 299 + "E"]),
    ]
    generated = [case(random_grid(rng, rng.randint(1, 40), rng.randint(2, 40), 0.3)) for _ in range(4)]
    return {"public": public, "private": private, "generated": generated}
