import string


def case(s, queries):
    lines = [f"{len(s)} {len(queries)}", s] + [f"{l} {r} {c}" for l, r, c in queries]
    return "\n".join(lines) + "\n"


def rand_queries(rng, n, q, letters, wide=False):
    out = []
    for _ in range(q):
        if wide:
            l = rng.randint(1, n // 10)
            r = rng.randint(n - n // 10, n)
        else:
            l = rng.randint(1, n)
            r = rng.randint(l, n)
        out.append((l, r, rng.choice(letters)))
    return out


def generate(rng):
    public = [case("abracadabra", [(1, 11, "a"), (2, 4, "b"), (7, 7, "c"), (3, 9, "r")])]
    small = "".join(rng.choice("abc") for _ in range(30))
    big = "".join(rng.choice(string.ascii_lowercase) for _ in range(50000))
    private = [
        case("z", [(1, 1, "z"), (1, 1, "a")]),
        case("aaaaaaaaaa", [(1, 10, "a"), (3, 3, "a"), (10, 10, "a"), (1, 10, "b")]),
        case(small, rand_queries(rng, 30, 50, "abcd")),
        case(big, rand_queries(rng, 50000, 10000, string.ascii_lowercase, wide=True)),
        case("e" * 50000, [(1, 50000, "e"), (50000, 50000, "e"), (1, 1, "f")] * 100),
    ]
    generated = [case(big[:3000], rand_queries(rng, 3000, 500, string.ascii_lowercase))]
    return {"public": public, "private": private, "generated": generated}
