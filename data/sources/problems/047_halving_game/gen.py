def games(gs):
    s = f"{len(gs)}\n"
    for a in gs:
        s += f"{len(a)}\n" + " ".join(map(str, a)) + "\n"
    return s


def generate(rng):
    public = [games([[1, 2, 3], [1], [10**18, 5]])]
    small = []
    for _ in range(300):
        small.append([rng.randint(1, 12) for _ in range(rng.randint(1, 4))])
    private = [
        games([[1], [2], [3], [1, 1], [2, 2], [4, 7], [3, 3, 3]]),
        games(small),
        games([[rng.randint(1, 300) for _ in range(rng.randint(1, 6))] for _ in range(200)]),
        games([[rng.randint(1, 3000) for _ in range(rng.randint(1, 6))] for _ in range(100)]),
        games([[rng.randint(1, 10**18) for _ in range(8000)]]),
    ]
    # heaps of the form (2g+1)*2^j - 1 with large Grundy values: many upward winning moves
    hs = []
    for _ in range(1000):
        gv = rng.randint(0, 2**40)
        j = rng.randint(0, 18)
        hs.append(((2 * gv + 1) << j) - 1)
    private.append(games([hs[i:i + 8] for i in range(0, 1000, 8)]))
    private.append(games([[10**18, 10**18 - 1, 2**59, 2**59 - 1, 2**59 + 1, 3 * 2**58 - 1]]))
    generated = []
    for _ in range(2):
        gs = []
        for _ in range(500):
            base = rng.randint(1, 10**17)
            gs.append([base + rng.randint(0, 10) for _ in range(rng.randint(1, 5))])
        generated.append(games(gs))
    generated.append(games([[rng.randint(1, 2**rng.randint(1, 59)) for _ in range(3)] for _ in range(1000)]))
    return {"public": public, "private": private, "generated": generated}
