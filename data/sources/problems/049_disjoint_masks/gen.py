def block(cases):
    return f"{len(cases)}\n" + "".join(f"{a} {b} {c}\n" for a, b, c in cases)


def generate(rng):
    public = [block([(1, 1, 2), (5, 3, 4), (10**18, 10**18, 10**18)])]
    private = [
        block([(0, 0, 0), (0, 5, 3), (7, 0, 100), (1, 1, 1), (2**20, 2**20, 2**21)]),
        block([(rng.randint(0, 40), rng.randint(0, 40), rng.randint(0, 90)) for _ in range(300)]),
        block([(rng.randint(0, 1000), rng.randint(0, 1000), rng.randint(0, 2000)) for _ in range(50)]),
        block([(rng.randint(0, 10**18), rng.randint(0, 10**18), rng.randint(0, 10**18)) for _ in range(1000)]),
        block([(2**59 + rng.randint(0, 10**17), 2**59 + rng.randint(0, 10**17), rng.randint(2**59, 10**18)) for _ in range(1000)]),
        block([(10**18, 10**18, 2 * rng.randint(0, 10**17)) for _ in range(10)] + [(2**59, 2**59 - 1, 2**60 - 1), (2**59 - 1, 2**59 - 1, 10**18)]),
    ]
    generated = [
        block([(rng.randint(0, 10**k), rng.randint(0, 10**k), rng.randint(0, 2 * 10**k)) for k in range(1, 19) for _ in range(20)]),
        block([(2**rng.randint(0, 59) - 1, 2**rng.randint(0, 59) - 1, 2**rng.randint(0, 59)) for _ in range(500)]),
    ]
    return {"public": public, "private": private, "generated": generated}
