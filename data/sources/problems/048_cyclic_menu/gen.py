def case(n, sig, rows):
    return f"{n} {len(rows)} {len(sig)}\n" + " ".join(str(x) for x in sig) + "\n" + "".join(r + "\n" for r in rows)


def rand_rows(rng, m, p):
    return ["".join("1" if rng.random() < p else "0" for _ in range(m)) for _ in range(m)]


def generate(rng):
    public = [case(4, [1], ["011", "101", "110"])]
    private = [
        case(1, [1], ["0"]),
        case(3, [1], ["1"]),
        case(2, [2, 1], ["01", "10"]),
        case(3, [1, 2], ["01", "10"]),
        case(5, [1, 3], ["011", "111", "100"]),
    ]
    for _ in range(4):
        m = rng.randint(1, 5)
        sig = rng.sample(range(1, m + 1), rng.randint(1, min(3, m)))
        private.append(case(rng.randint(1, 7), sig, rand_rows(rng, m, 0.6)))
    private.append(case(10**18, [1, 5, 10], ["1" * 10] * 10))
    private.append(case(999999999999999999, [2, 7, 9], rand_rows(rng, 10, 0.7)))
    private.append(case(rng.randint(10**17, 10**18), [4], rand_rows(rng, 10, 0.4)))
    generated = []
    for _ in range(4):
        m = rng.randint(2, 10)
        sig = rng.sample(range(1, m + 1), rng.randint(1, min(3, m)))
        generated.append(case(rng.randint(1, 10**18), sig, rand_rows(rng, m, rng.random())))
    generated.append(case(1, [1, 2, 3], ["1" * 10] * 10))
    generated.append(case(123456789, [3, 2, 1], ["1" * 10] * 10))
    return {"public": public, "private": private, "generated": generated}
