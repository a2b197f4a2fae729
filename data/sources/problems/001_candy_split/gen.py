def case_block(ns):
    return f"{len(ns)}\n" + "".join(f"{n}\n" for n in ns)


def generate(rng):
    public = [case_block([4, 2, 7])]
    private = [
        case_block([1, 2, 3, 4, 5, 6]),
        case_block([10**18, 10**18 - 1, 999999999999999998]),
        case_block([rng.randint(1, 100) for _ in range(100)]),
    ]
    generated = [case_block([rng.randint(1, 10**18) for _ in range(3000)])]
    return {"public": public, "private": private, "generated": generated}
