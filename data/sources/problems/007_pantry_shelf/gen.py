def case(W, ws):
    return f"{len(ws)} {W}\n" + " ".join(map(str, ws)) + "\n"


def generate(rng):
    public = [case(10, [6, 2, 5, 3, 9])]
    private = [
        case(1, [2]),
        case(3, [7, 1, 1, 9, 1, 1]),
        case(3 * 10**9, [10**9] * 5),
        case(10, [rng.randint(1, 20) for _ in range(12)]),
        case(5, [5]),
        case(10**18, [10**9] * 10**4),
        case(7 * 10**12, [rng.randint(1, 10**9) for _ in range(10**4)]),
        case(100, [rng.randint(1, 30) for _ in range(50)]),
    ]
    generated = [
        case(rng.randint(1, 10**6), [rng.randint(1, 10**5) for _ in range(300)]),
        case(rng.randint(1, 10**10), [rng.randint(1, 10**9) for _ in range(1000)]),
    ]
    return {"public": public, "private": private, "generated": generated}
