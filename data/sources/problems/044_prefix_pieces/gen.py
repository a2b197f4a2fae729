def build(rng, t, pieces, noise=0.0, letters="ab"):
    out = []
    for _ in range(pieces):
        k = rng.randint(1, len(t))
        out.append(t[:k])
    s = list("".join(out))
    for i in range(len(s)):
        if rng.random() < noise:
            s[i] = rng.choice(letters)
    return "".join(s)


def case(t, s):
    return t + "\n" + s + "\n"


def rand_str(rng, n, letters):
    return "".join(rng.choice(letters) for _ in range(n))


def generate(rng):
    public = [case("abab", "ababaab")]
    private = [
        case("a", "a"),
        case("b", "a"),
        case("aab", "aaab"),          # greedy "longest piece first" gets stuck
        case("abc", "abcabcab"),
        case("ab", "ba"),
        case("aaaaa", "a" * 40),
    ]
    for _ in range(4):
        t = rand_str(rng, rng.randint(1, 8), "ab")
        private.append(case(t, build(rng, t, rng.randint(1, 10), 0.05)))
    private.append(case("a" * 70000, "a" * 70000))
    # long periodic strings with a few defects: many long matches
    t = ("aab" * 23334)[:70000]
    s = build(rng, t[:3000], 60)
    s = (s * (70000 // len(s) + 1))[:69990] + "aabaa"
    private.append(case(t, s))
    generated = []
    for _ in range(6):
        t = rand_str(rng, rng.randint(1, 30), "abc"[:rng.randint(1, 3)])
        generated.append(case(t, build(rng, t, rng.randint(1, 40), rng.choice([0, 0, 0.01, 0.03]), "abc")))
    t = "ab" * 15000 + "b"
    generated.append(case(t, build(rng, t, 4, 0.0)[:60000]))
    return {"public": public, "private": private, "generated": generated}
