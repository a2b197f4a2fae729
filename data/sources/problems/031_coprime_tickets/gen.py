LIM = 10**18


def fmt(m, qs):
    return f"{m} {len(qs)}\n" + "".join(f"{l} {r}\n" for l, r in qs)


def rand_q(rng, hi):
    a, b = rng.randint(1, hi), rng.randint(1, hi)
    return (min(a, b), max(a, b))


def generate(rng):
    public = [fmt(12, [(1, 12), (5, 7), (10, 10)])]
    primorial = 2 * 3 * 5 * 7 * 11 * 13 * 17 * 19 * 23  # 223092870, nine distinct primes
    private = [
        fmt(1, [(1, 1), (1, 10), (5, LIM)]),
        fmt(2, [(1, 1), (2, 2), (1, 100), (3, 3)]),
        fmt(30, [rand_q(rng, 200) for _ in range(50)]),
        fmt(999999937, [(1, LIM), (999999937, 999999937), (999999936, 999999938), (1, 10**9)]),
        fmt(31607 * 31607, [rand_q(rng, 10**5) for _ in range(20)]),
        fmt(4 * 249999991, [(1, 10**6), (1, LIM), (rng.randint(1, 10**6), 10**7)]),  # a big prime factor left after trial division
        fmt(10**9, [rand_q(rng, LIM) for _ in range(1000)]),
        fmt(primorial, [rand_q(rng, LIM) for _ in range(1000)]),
        fmt(primorial * 4, [(rng.randint(1, 10**6), LIM - rng.randint(0, 10**6)) for _ in range(1000)]),
    ]
    generated = [fmt(rng.randint(1, 10**9), [rand_q(rng, 10**12) for _ in range(100)]) for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
