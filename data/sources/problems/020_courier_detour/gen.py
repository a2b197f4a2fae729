LIM = 10**5


def block(cases):
    return f"{len(cases)}\n" + "".join(f"{a} {b} {x} {y}\n" for a, b, x, y in cases)


def rand_case(rng, hi, inside):
    a, b = rng.randint(0, hi), rng.randint(0, hi)
    if inside:
        return (a, b, rng.randint(0, a), rng.randint(0, b))
    return (a, b, rng.randint(0, hi), rng.randint(0, hi))


def generate(rng):
    public = [block([(2, 2, 1, 1), (2, 2, 3, 0), (3, 1, 0, 0), (1, 2, 1, 0)])]
    private = [
        block([(0, 0, 0, 0), (0, 0, 1, 1), (0, 5, 0, 3), (5, 0, 0, 3), (4, 4, 4, 4), (1, 1, 1, 0), (3, 3, 0, 4)]),
        block([rand_case(rng, 10, i % 2 == 0) for i in range(300)]),
        block([(LIM, LIM, LIM // 2, LIM // 2), (LIM, LIM, 0, LIM), (LIM, LIM, LIM, LIM), (LIM, 0, LIM, 1),
               (LIM, LIM, 1, 0), (0, LIM, 0, LIM - 1)]),
        block([rand_case(rng, LIM, i % 3 != 0) for i in range(5000)]),
    ]
    generated = [block([rand_case(rng, 1000, i % 2 == 0) for i in range(1000)])]
    return {"public": public, "private": private, "generated": generated}
