def case(M, H, spells):
    return f"{len(spells)} {M} {H}\n" + "".join(f"{c} {d}\n" for c, d in spells)


def rand_spells(rng, n, hi):
    return [(rng.randint(1, hi), rng.randint(1, hi)) for _ in range(n)]


def generate(rng):
    public = [case(10, 7, [(3, 4), (5, 5), (4, 2), (8, 9)])]
    big = rand_spells(rng, 15, 10**9)
    private = [
        case(0, 0, [(1, 1)]),
        case(1, 0, [(1, 1)]),
        case(5, 10, [(5, 9)]),
        case(10**15, 0, [(1, 1)] * 15),
        case(10**15, 10**15, [(10**9, 10**9)] * 15),
        case(7 * 10**9, 6 * 10**9, [(10**9, 10**9)] * 15),
        case(20, 15, rand_spells(rng, 8, 10)),
        case(sum(c for c, _ in big) // 2, sum(d for _, d in big) // 2, big),
        case(6 * 10**9, 5 * 10**9, rand_spells(rng, 15, 10**9)),
    ]
    generated = [case(rng.randint(0, 60), rng.randint(0, 60), rand_spells(rng, rng.randint(1, 12), 20)) for _ in range(4)]
    return {"public": public, "private": private, "generated": generated}
