LIM = 10**6


def block(cases):
    return f"{len(cases)}\n" + "".join(f"{l} {r}\n" for l, r in cases)


def rand_case(rng, hi):
    l = rng.randint(1, hi)
    return (l, rng.randint(l, hi))


def generate(rng):
    public = [block([(1, 10), (11, 13), (14, 16), (1, 1)])]
    private = [
        block([(1, 1), (2, 2), (1, 2), (4, 4), (3, 5), (24, 28), (97, 97), (90, 96)]),
        block([rand_case(rng, 200) for _ in range(200)]),
        block([(1, LIM), (LIM, LIM), (999983, 999983), (999984, LIM), (2, LIM), (500000, LIM)]),
        block([(rng.randint(1, 1000), rng.randint(LIM - 1000, LIM)) for _ in range(10**4)]),
    ]
    generated = [block([rand_case(rng, LIM) for _ in range(2000)]), block([rand_case(rng, 5000) for _ in range(500)])]
    return {"public": public, "private": private, "generated": generated}
