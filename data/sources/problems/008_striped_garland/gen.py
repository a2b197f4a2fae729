def case(s):
    return f"{len(s)}\n{s}\n"


def generate(rng):
    public = [case("GRGRGRR")]
    private = [
        case("RRRGGG"),
        case("R"),
        case("GG"),
        case("RGRGRGRGRG"),
        case("G" + "GRGRGRGRGRGRGRGRGRGRGRGRGRGRGRG"),
        case("".join(rng.choice("RG") for _ in range(40))),
        case("R" * 100000),
        case("G" + "RG" * 49999 + "R"),
        case("".join(rng.choice("RG") for _ in range(100000))),
    ]
    generated = [case("".join(rng.choice("RG") for _ in range(rng.randint(1, 3000)))) for _ in range(4)]
    return {"public": public, "private": private, "generated": generated}
