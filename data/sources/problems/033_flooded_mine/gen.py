def fmt(k, rows):
    return f"{len(rows)} {len(rows[0])} {k}\n" + "".join(r + "\n" for r in rows)


def place(rows, r, c, ch):
    rows[r] = rows[r][:c] + ch + rows[r][c + 1:]


def random_grid(rng, n, m, rock, waters):
    cells = [["#" if rng.random() < rock else "." for _ in range(m)] for _ in range(n)]
    spots = rng.sample(range(n * m), 2 + waters)
    for j, p in enumerate(spots):
        cells[p // m][p % m] = "S" if j == 0 else "E" if j == 1 else "W"
    return ["".join(r) for r in cells]


def snake(n, m):
    rows = []
    for r in range(n):
        if r % 2 == 0:
            rows.append("." * m)
        elif r % 4 == 1:
            rows.append("#" * (m - 1) + ".")
        else:
            rows.append("." + "#" * (m - 1))
    place(rows, 0, 0, "W")
    place(rows, 0, 1, "S")
    last = n - 1 if n % 2 == 1 else n - 2
    place(rows, last, m - 1 if last % 4 == 0 else 0, "E")
    return rows


def generate(rng):
    public = [fmt(2, ["......", "...W..", ".E...S", ".....#"])]
    private = [
        fmt(1, ["SE"]),
        fmt(1, ["S", "E"]),
        fmt(1, ["SEW"]),
        fmt(1, ["S.EW"]),
        fmt(3, ["S.EW"]),
        fmt(1, ["S#E"]),
        fmt(2, random_grid(rng, 5, 7, 0.15, 1)),
        fmt(3, random_grid(rng, 8, 8, 0.2, 1)),
        fmt(10**9, ["S" + "." * 299] + ["." * 300] * 298 + ["." * 295 + "WE..."]),
        fmt(1, snake(300, 300)),
        fmt(40, random_grid(rng, 300, 300, 0.25, 12)),
        fmt(10**9, ["S" + "." * 299] + ["." * 300] * 149 + ["#" * 299 + "."] + ["." * 300] * 148 + ["W" + "." * 298 + "E"]),
    ]
    generated = [fmt(rng.randint(2, 6), random_grid(rng, rng.randint(5, 40), rng.randint(5, 40), 0.2, rng.randint(1, 3)))
                 for _ in range(4)]
    return {"public": public, "private": private, "generated": generated}
