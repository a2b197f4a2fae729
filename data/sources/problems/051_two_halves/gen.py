def case(cap, items):
    return f"{len(items)} {cap}\n" + "".join(f"{w} {v}\n" for w, v in items)


def rand_items(rng, n, wmax, vmax):
    return [(rng.randint(1, wmax), rng.randint(1, vmax)) for _ in range(n)]


def generate(rng):
    public = [case(10, [(5, 6), (4, 5), (6, 6), (3, 1)])]
    private = [
        case(0, [(1, 1)]),
        case(5, [(5, 7)]),
        case(4, [(5, 7)]),
        case(6, [(2, 3), (2, 3), (4, 6), (3, 3), (1, 1)]),     # ties in worth with different weights
        case(10, [(6, 10), (5, 6), (5, 6)]),                    # greedy by ratio fails
    ]
    for _ in range(3):
        n = rng.randint(6, 14)
        private.append(case(rng.randint(0, 60), rand_items(rng, n, 15, rng.choice([5, 30]))))
    private.append(case(3 * 10**13, rand_items(rng, 34, 2 * 10**12, 10**12)))
    heavy = [(rng.randint(10**11, 10**12), 0) for _ in range(34)]
    heavy = [(w, w + rng.randint(-1000, 1000)) for w, _ in heavy]    # worth close to weight
    private.append(case(sum(w for w, _ in heavy) // 2, heavy))
    private.append(case(10**14, rand_items(rng, 34, 10**12, 10**12)))  # everything fits
    # many equal worths: the weight tie-break matters
    tie = [(rng.randint(1, 10**6) * 2, 7 * 10**11) for _ in range(33)] + [(10**12, 1)]
    private.append(case(rng.randint(10**7, 2 * 10**7), tie))
    private.append(case(3, [(100, 1), (100, 1), (3, 5), (2, 5)]))  # equal worths in one half: keep the lighter
    generated = [
        case(rng.randint(0, 10**13), rand_items(rng, 33, 10**12, 10**12)),
        case(rng.randint(0, 200), rand_items(rng, 34, 50, 10)),
        case(rng.randint(10**12, 5 * 10**12), rand_items(rng, 34, 10**12, 10**3)),
    ]
    return {"public": public, "private": private, "generated": generated}
