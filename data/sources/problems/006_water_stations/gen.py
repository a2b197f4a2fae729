def block(cases):
    return f"{len(cases)}\n" + "".join(f"{l} {r} {k}\n" for l, r, k in cases)


def rand_case(rng, hi, khi):
    l = rng.randint(1, hi)
    r = rng.randint(l, hi)
    return (l, r, rng.randint(1, khi))


def generate(rng):
    public = [block([(3, 10, 3), (4, 5, 7), (7, 7, 7)])]
    private = [
        block([(1, 1, 1), (1, 1, 2), (2, 2, 1), (5, 10, 5), (6, 10, 5), (5, 9, 5), (1, 100, 100), (1, 99, 100)]),
        block([rand_case(rng, 60, 12) for _ in range(300)]),
        block([(1, 10**18, 1), (1, 10**18, 10**18), (10**18, 10**18, 10**18), (2, 10**18, 10**18), (1, 10**18 - 1, 10**18)]),
        block([rand_case(rng, 10**18, 10**18) for _ in range(1500)]),
        block([rand_case(rng, 10**18, 10**6) for _ in range(1500)]),
    ]
    generated = [block([rand_case(rng, 10**9, 10**4) for _ in range(2000)])]
    return {"public": public, "private": private, "generated": generated}
