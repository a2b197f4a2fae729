def block(qs):
    return f"{len(qs)}\n" + "".join(f"{n} {p} {e}\n" for n, p, e in qs)


SMALL_PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 97, 101]
BIG_PRIMES = [999999937, 1000000007, 998244353, 65537, 1009, 1000003]


def generate(rng):
    public = [block([(6, 2, 1), (10, 3, 0), (10**18, 2, 5)])]
    private = [
        block([(1, 2, 0), (1, 2, 1), (2, 2, 1), (4, 2, 2), (7, 7, 0), (7, 7, 1), (9, 3, 1), (9, 3, 2)]),
        block([(rng.randint(1, 300), rng.choice(SMALL_PRIMES), rng.randint(0, 6)) for _ in range(200)]),
        block([(rng.randint(1, 3000), rng.choice(SMALL_PRIMES), rng.randint(0, 10)) for _ in range(20)]),
        block([(rng.randint(10**17, 10**18), 2, rng.randint(0, 60)) for _ in range(500)]),
        block([(rng.randint(1, 10**18), rng.choice(SMALL_PRIMES + BIG_PRIMES), rng.randint(0, 40)) for _ in range(500)]),
        block([(10**18, 2, e) for e in range(0, 101, 5)] + [(2**59 - 1, 2, 0), (2**59, 2, 58), (2**59, 2, 59),
               (10**18, 999999937, 0), (10**18, 999999937, 1), (10**18, 999999937, 2), (10**18, 999999937, 3)]),
    ]
    generated = [
        block([(rng.randint(1, 10**18), rng.choice(BIG_PRIMES), rng.randint(0, 3)) for _ in range(300)]),
        block([(p ** rng.randint(1, 5) - 1, p, rng.randint(0, 3)) for p in SMALL_PRIMES for _ in range(5)]),
        block([(rng.randint(1, 10**18), 3, rng.randint(0, 38)) for _ in range(500)]),
    ]
    return {"public": public, "private": private, "generated": generated}
