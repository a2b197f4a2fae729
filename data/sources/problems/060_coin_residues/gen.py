def case(T, coins):
    return f"{len(coins)} {T}\n" + " ".join(map(str, coins)) + "\n"


def generate(rng):
    public = [case(10, [3, 5])]
    private = [
        case(1, [1]),
        case(1, [2]),
        case(100, [1, 7]),
        case(50, [4, 6, 10]),           # all coins even
        case(1000, [6, 10, 15]),
    ]
    for _ in range(3):
        k = rng.randint(1, 4)
        private.append(case(rng.randint(1, 3000), [rng.randint(1, rng.choice([10, 60, 300])) for _ in range(k)]))
    private.append(case(10**18, [99991] + [rng.randint(90000, 100000) for _ in range(9)]))
    private.append(case(rng.randint(10**17, 10**18), [100000, 99999, 65536, 77777, 31415, 27182, 99989, 50000, 12345, 54321]))
    private.append(case(10**18, [99990, 99990 + 15, 99990 * 2 + 21, 33330 * 5]))   # common divisor 3
    private.append(case(123456789, [100000, 99999]))
    generated = [
        case(rng.randint(1, 10**18), [rng.randint(50000, 100000) for _ in range(10)]),
        case(rng.randint(1, 10**9), [rng.randint(1, 100000) for _ in range(rng.randint(1, 10))]),
        case(10**18, [100000] * 10),
    ]
    return {"public": public, "private": private, "generated": generated}
