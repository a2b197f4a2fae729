def block(qs):
    return f"{len(qs)}\n" + "".join(f"{n} {h}\n" for n, h in qs)


def generate(rng):
    public = [block([(3, 2), (4, 1), (4, 4), (5, 2)])]
    private = [
        block([(1, 1), (2, 1), (2, 2)]),
        block([(n, h) for n in range(1, 13) for h in range(1, n + 1)]),
        block([(n, rng.randint(1, n)) for n in [rng.randint(1, 60) for _ in range(40)]]),
        block([(200000, 100000)]),
        block([(200000, 3)]),
        block([(100000, 1), (50000, 2), (30000, 700), (20000, 20000)]),
        block([(20, rng.randint(1, 20)) for _ in range(10000)]),
    ]
    generated = [
        block([(200000, 447)]),
        block([(1000, h) for h in range(1, 201)]),
    ]
    qs = []
    left = 200000
    while left > 0:
        n = min(left, rng.randint(1, 5000))
        qs.append((n, rng.randint(1, n)))
        left -= n
    generated.append(block(qs))
    return {"public": public, "private": private, "generated": generated}
