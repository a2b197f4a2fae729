def case(n, a):
    return f"{n} {len(a)}\n" + " ".join(map(str, a)) + "\n"


PRIMES_1E9 = [1000000007, 1000000009, 998244353, 1000000021, 1000000033, 999999937,
              999999929, 999999893, 1000000087, 1000000093, 1000000097, 999999883,
              1000000123, 999999797, 999999761]


def generate(rng):
    public = [case(20, [2, 3, 4])]
    private = [
        case(1, [1]),
        case(1, [2]),
        case(10, [1, 1, 2]),
        case(100, [6, 6, 10, 15]),
    ]
    for _ in range(3):
        k = rng.randint(1, 8)
        private.append(case(rng.randint(1, 3000), [rng.randint(1, 40) for _ in range(k)]))
    private.append(case(10**18, [rng.randint(2, 60) for _ in range(15)]))
    private.append(case(10**18, PRIMES_1E9))                  # products overflow 64 bits
    private.append(case(999999999999999989, [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]))
    private.append(case(10**18, [10**18, 10**18 - 1, 5 * 10**17, 2, 4, 8, 16, 32, 64, 128,
                                 3**30, 5**20, 7**15, 10**9, 999999999999999989]))
    generated = []
    for _ in range(4):
        k = rng.randint(10, 15)
        generated.append(case(rng.randint(1, 10**18), [rng.randint(1, 10**rng.randint(1, 18)) for _ in range(k)]))
    generated.append(case(rng.randint(10**17, 10**18), [rng.choice([2, 3, 5, 7]) ** rng.randint(1, 12) for _ in range(15)]))
    return {"public": public, "private": private, "generated": generated}
