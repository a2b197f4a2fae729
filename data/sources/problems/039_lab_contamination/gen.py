def fmt(c):
    return f"{len(c)}\n" + "".join(" ".join(map(str, row)) + "\n" for row in c)


def rand_matrix(rng, n, lo, hi):
    return [[0 if i == j else rng.randint(lo, hi) for i in range(n)] for j in range(n)]


def generate(rng):
    public = [fmt([[0, 5, 1], [2, 0, 7], [4, 1, 0]])]
    private = [
        fmt([[0]]),
        fmt([[0, 3], [8, 0]]),
        fmt(rand_matrix(rng, 4, 0, 10)),
        fmt(rand_matrix(rng, 7, 0, 100)),
        fmt(rand_matrix(rng, 9, 0, 10**9)),
        fmt(rand_matrix(rng, 15, 10**9 - 1000, 10**9)),
        fmt(rand_matrix(rng, 15, 0, 10**9)),
        fmt([[0 if i == j else 10**9 for i in range(15)] for j in range(15)]),
        fmt(rand_matrix(rng, 14, 0, 3)),
    ]
    generated = [fmt(rand_matrix(rng, rng.randint(10, 13), 0, 10**6)) for _ in range(2)]
    return {"public": public, "private": private, "generated": generated}
