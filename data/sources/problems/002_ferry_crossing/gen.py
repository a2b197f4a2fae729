def block(cases):
    return f"{len(cases)}\n" + "".join(f"{n} {k}\n" for n, k in cases)


def generate(rng):
    public = [block([(5, 2), (1, 10), (6, 3)])]
    private = [
        block([(1, 1), (2, 1), (3, 3), (4, 3), (7, 7), (8, 7), (10, 1), (9, 2)]),
        block([(rng.randint(1, 50), rng.randint(1, 10)) for _ in range(200)]),
        block([(10**18, 1), (10**18 - 1, 1), (10**18, 10**18), (1, 10**18), (10**18, 3), (999999999999999999, 2)]),
        block([(rng.randint(1, 10**18), rng.randint(1, 10**18)) for _ in range(3000)]),
        block([(rng.randint(1, 10**18), rng.randint(1, 10**6)) for _ in range(3000)]),
    ]
    generated = [
        block([(rng.randint(1, 10**9), rng.randint(1, 10**9)) for _ in range(2000)]),
        block([(k * rng.randint(1, 10**6), k) for k in (rng.randint(1, 10**12) for _ in range(2000))]),
    ]
    return {"public": public, "private": private, "generated": generated}
