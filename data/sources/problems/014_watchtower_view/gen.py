def block(cases):
    return f"{len(cases)}\n" + "".join(f"{n} {r} {c}\n" for n, r, c in cases)


def rand_case(rng, hi):
    n = rng.randint(1, hi)
    return (n, rng.randint(1, n), rng.randint(1, n))


def generate(rng):
    public = [block([(4, 2, 1), (1, 1, 1), (5, 3, 3)])]
    small = [(n, r, c) for n in range(1, 6) for r in range(1, n + 1) for c in range(1, n + 1)]
    private = [
        block(small),
        block([rand_case(rng, 40) for _ in range(500)]),
        block([(10**9, 1, 1), (10**9, 10**9, 10**9), (10**9, 5 * 10**8, 5 * 10**8), (10**9, 1, 10**9),
               (10**9, 123456789, 987654321), (2, 1, 2), (10**9, 10**9, 1)]),
        block([rand_case(rng, 10**9) for _ in range(3000)]),
    ]
    generated = [block([rand_case(rng, 10**5) for _ in range(2000)])]
    return {"public": public, "private": private, "generated": generated}
