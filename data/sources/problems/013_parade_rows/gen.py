def block(cases):
    return f"{len(cases)}\n" + "".join(f"{a} {b}\n" for a, b in cases)


def generate(rng):
    public = [block([(17, 5), (13, 5), (3, 8), (12, 4)])]
    private = [
        block([(1, 1), (1, 2), (2, 1), (1, 3), (2, 3), (4, 3), (5, 3), (6, 4), (5, 2), (7, 100)]),
        block([(rng.randint(1, 100), rng.randint(1, 30)) for _ in range(500)]),
        block([(1, 10**18), (10**18, 10**18), (10**18, 1), (10**18 - 1, 10**18), (5 * 10**17, 10**18),
               (10**18, 2 * 10**17 + 7), (10**18, 999999999999999999)]),
        block([(rng.randint(1, 10**18), rng.randint(1, 10**18)) for _ in range(2000)]),
        block([(rng.randint(1, 10**18), rng.randint(1, 10**9)) for _ in range(2000)]),
    ]
    generated = [
        block([(rng.randint(1, 10**6), rng.randint(1, 10**6)) for _ in range(1000)]),
        block([(rng.randint(1, 10**9), rng.randint(10**8, 10**9)) for _ in range(1000)]),
    ]
    return {"public": public, "private": private, "generated": generated}
