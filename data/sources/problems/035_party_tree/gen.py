def fmt(c, a, boss):
    return f"{len(a)} {c}\n" + " ".join(map(str, a)) + "\n" + " ".join(map(str, boss)) + "\n"


def random_tree(rng, n, depth_bias=0):
    # returns bosses b_2..b_n for a random tree rooted at 1 with shuffled labels
    labels = list(range(2, n + 1))
    rng.shuffle(labels)
    labels = [1] + labels
    boss = [0] * (n + 1)
    for i in range(1, n):
        j = rng.randint(max(0, i - 1 - depth_bias), i - 1) if depth_bias else rng.randint(0, i - 1)
        boss[labels[i]] = labels[j]
    return boss[2:]


def generate(rng):
    public = [fmt(1, [4, 5, -2, 6, 2], [1, 1, 2, 2])]
    private = [
        fmt(0, [-5], []),
        fmt(7, [10**9], []),
        fmt(5, [3, 4], [1]),
        fmt(2, [3, 4], [1]),
        fmt(rng.randint(0, 10), [rng.randint(-10, 10) for _ in range(8)], random_tree(rng, 8)),
        fmt(rng.randint(0, 5), [rng.randint(-5, 20) for _ in range(15)], random_tree(rng, 15)),
        fmt(3, [rng.randint(1, 10) for _ in range(200)], random_tree(rng, 200, 3)),
        # a long chain (deep recursion) with small numbers
        fmt(1, [rng.randint(1, 3) for _ in range(5000)], list(range(1, 5000))),
        fmt(0, [10**9] * 4000, random_tree(rng, 4000)),
        fmt(rng.randint(0, 10**9), [rng.randint(-10**9, 10**9) for _ in range(10**4)], random_tree(rng, 10**4, 5)),
        fmt(10**9, [10**9] * 3000, [1] * 2999),
    ]
    generated = [fmt(rng.randint(0, 100), [rng.randint(-100, 100) for _ in range(300)], random_tree(rng, 300))
                 for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
