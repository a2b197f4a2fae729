def case(n, c, words):
    return f"{n} {c} {len(words)}\n" + "".join(w + "\n" for w in words)


def rand_words(rng, c, total, k):
    letters = "abcdefghijklmnopqrstuvwxyz"[:c]
    lens = [1] * k
    for _ in range(total - k):
        lens[rng.randrange(k)] += 1
    return ["".join(rng.choice(letters) for _ in range(L)) for L in lens]


def generate(rng):
    public = [case(3, 2, ["aa", "bab"])]
    private = [
        case(1, 1, ["a"]),
        case(5, 1, ["aa"]),
        case(4, 2, ["ab", "b"]),
        case(6, 3, ["abc", "b"]),           # "b" hides inside "abc": suffix links matter
        case(7, 2, ["aba", "ba", "bb"]),
        case(10, 26, ["z"]),
    ]
    for _ in range(3):
        c = rng.randint(1, 3)
        private.append(case(rng.randint(1, 8), c, rand_words(rng, c, rng.randint(3, 8), rng.randint(1, 3))))
    private.append(case(10**18, 26, ["abcdefghijklmnopqrstuvwxyzabcd"]))
    private.append(case(999999999999999999, 3, ["abcabcabca", "cbacbacbac", "bbbbbbbbbb"]))
    private.append(case(10**18 - 7, 2, ["aabab", "babba", "abbba", "bbaab", "aaaaa", "bbbbb"]))
    private.append(case(123456789012345678, 26, rand_words(rng, 26, 30, 10)))
    generated = []
    for _ in range(4):
        c = rng.randint(1, 5)
        generated.append(case(rng.randint(1, 10**18), c, rand_words(rng, c, rng.randint(5, 30), rng.randint(1, 5))))
    generated.append(case(10**18, 4, ["ab", "ba", "cd", "dc", "ac", "ca", "bd", "db"]))
    return {"public": public, "private": private, "generated": generated}
