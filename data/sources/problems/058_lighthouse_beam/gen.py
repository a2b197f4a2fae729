def block(cases):
    return f"{len(cases)}\n" + "".join(" ".join(map(str, cs)) + "\n" for cs in cases)


def rand_case(rng, nmax, mmax):
    m = rng.randint(1, mmax)
    return (rng.randint(1, nmax), m, rng.randrange(m), rng.randrange(m), rng.randint(0, m))


def generate(rng):
    public = [block([(10, 7, 3, 2, 4), (5, 5, 0, 3, 3), (10**9, 999999937, 123456789, 987654321, 500000000)])]
    private = [
        block([(1, 1, 0, 0, 0), (1, 1, 0, 0, 1), (7, 3, 0, 0, 3), (6, 4, 2, 1, 2), (100, 10, 9, 9, 5)]),
        block([rand_case(rng, 200, 50) for _ in range(500)]),
        block([rand_case(rng, 3000, 3000) for _ in range(30)]),
        block([rand_case(rng, 10**9, 10**9) for _ in range(3000)]),
        block([(10**9, 10**9, 10**9 - 1, 10**9 - 1, c) for c in (0, 1, 10**9 - 1, 10**9)]
              + [(10**9, 999999999, 1, 0, 500000000), (10**9, 2, 1, 1, 1), (10**9, 1, 0, 0, 1)]),
    ]
    # a / m close to a simple fraction: long runs for the Euclid-like recursion
    fib = [1, 1]
    while fib[-1] < 10**9:
        fib.append(fib[-1] + fib[-2])
    private.append(block([(10**9, fib[-2], fib[-3], rng.randrange(fib[-2]), rng.randint(0, fib[-2])) for _ in range(50)]))
    generated = [
        block([rand_case(rng, 10**9, rng.choice([10, 1000, 10**6, 10**9])) for _ in range(1500)]),
        block([(rng.randint(1, 10**9), 10**9, 0, rng.randrange(10**9), rng.randint(0, 10**9)) for _ in range(200)]),
    ]
    return {"public": public, "private": private, "generated": generated}
