def case(n, k, cracked):
    head = f"{n} {k} {len(cracked)}\n"
    return head + (" ".join(map(str, cracked)) + "\n" if cracked else "")


def rand_cracked(rng, n, m):
    return rng.sample(range(1, n), m)


def generate(rng):
    public = [case(6, 3, [4, 2])]
    private = [
        case(1, 1, []),
        case(2, 1, [1]),
        case(5, 5, []),
        case(10, 2, [5, 6]),
        case(40, 3, rand_cracked(rng, 40, 8)),
        case(90, 1, []),
        case(2000, 2, []),
        case(100000, 2, rng.sample(range(1, 100000, 2), 20000)),
        case(100000, 100000, rand_cracked(rng, 100000, 20000)),
        case(100000, 777, []),
        case(100000, 50000, rand_cracked(rng, 100000, 500)),
    ]
    generated = [case(n, rng.randint(4, 30), rand_cracked(rng, n, n // 20)) for n in (300, 1000, 5000)]
    return {"public": public, "private": private, "generated": generated}
