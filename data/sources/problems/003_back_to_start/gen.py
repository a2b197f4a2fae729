def case(s):
    return f"{len(s)}\n{s}\n"


def generate(rng):
    public = [case("RLLRRRLL")]
    private = [
        case("L"),
        case("RL"),
        case("LLLLRRRR"),
        case("".join(rng.choice("LR") for _ in range(300))),
        case("R" * 50000 + "L" * 50000),
        case("L" * 30000),
        case("LR" * 40000),
        case("".join(rng.choice("LR") for _ in range(100000))),
    ]
    generated = [
        case("".join(rng.choice("LR") for _ in range(rng.randint(1, 2000)))) for _ in range(4)
    ]
    return {"public": public, "private": private, "generated": generated}
