def case(s):
    return f"{len(s)}\n{s}\n"


def rand_str(rng, n, letters):
    return "".join(rng.choice(letters) for _ in range(n))


def generate(rng):
    public = [case("ababa")]
    private = [
        case("z"),
        case("ab"),
        case("aaaa"),
        case("abacaba"),
        case("abcba" * 3),
    ]
    for _ in range(3):
        private.append(case(rand_str(rng, rng.randint(5, 60), "abc"[:rng.randint(1, 3)])))
    private.append(case("a" * 100000))
    private.append(case(("abacabad" * 12500)[:100000]))
    generated = [
        case(rand_str(rng, 60000, "ab")),
        case("".join(rng.choice(["aab", "aba", "b"]) for _ in range(15000))[:40000]),
        case(rand_str(rng, 2000, "abcdefghijklmnopqrstuvwxyz")),
    ]
    return {"public": public, "private": private, "generated": generated}
