import string


def case(s):
    return f"{len(s)}\n{s}\n"


def generate(rng):
    public = [case("abcabcdef")]
    private = [
        case("z"),
        case("ab"),
        case("aabb"),
        case("racecar"),
        case(string.ascii_lowercase),
        case("".join(rng.choice("abc") for _ in range(25))),
        case("q" * 100000),
        case("".join(rng.choice(string.ascii_lowercase) for _ in range(99999))),
    ]
    generated = [case("".join(rng.choice("xyz") for _ in range(rng.randint(1, 100)))) for _ in range(4)]
    return {"public": public, "private": private, "generated": generated}
