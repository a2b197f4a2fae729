LIM = 10**6


def case(talks):
    return f"{len(talks)}\n" + "".join(f"{s} {e}\n" for s, e in talks)


def rand_talks(rng, n, hi, longest):
    out = []
    for _ in range(n):
        s = rng.randint(0, hi - 1)
        out.append((s, min(hi, s + rng.randint(1, longest))))
    return out


def generate(rng):
    public = [case([(1, 3), (2, 5), (3, 4), (4, 7), (6, 8), (7, 9)])]
    private = [
        case([(0, 1)]),
        case([(0, 10), (1, 2), (2, 3), (3, 4)]),
        case([(5, 6)] * 4),
        case([(0, 5), (5, 10), (10, 15), (4, 6)]),
        case(rand_talks(rng, 30, 50, 10)),
        case(rand_talks(rng, 5000, LIM, 1000)),
        case([(i * 300, i * 300 + 300) for i in range(3000)][::-1]),
        case(rand_talks(rng, 3000, LIM, LIM)),
        case([(k, LIM - k) for k in rng.sample(range(LIM // 2), 10**4)]),
    ]
    generated = [case(rand_talks(rng, 500, 2000, 50)), case(rand_talks(rng, 2000, 10**5, 300))]
    return {"public": public, "private": private, "generated": generated}
