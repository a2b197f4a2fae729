def block(cases):
    return f"{len(cases)}\n" + "".join(f"{h:02d}:{m:02d} {k}\n" for h, m, k in cases)


def generate(rng):
    public = [block([(23, 50, 15), (8, 5, 0), (12, 34, 1440)])]
    private = [
        block([(0, 0, 0), (23, 59, 1), (0, 0, 59), (0, 0, 60), (9, 59, 1), (23, 0, 59), (1, 30, 30)]),
        block([(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 5000)) for _ in range(500)]),
        block([(23, 59, 10**18), (0, 0, 10**18), (12, 0, 10**18 - 1), (5, 7, 999999999999999999)]),
        block([(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 10**18)) for _ in range(3000)]),
    ]
    generated = [
        block([(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 10**9)) for _ in range(2000)]),
        block([(rng.randint(0, 23), rng.randint(0, 59), 1440 * rng.randint(0, 10**12)) for _ in range(1000)]),
    ]
    return {"public": public, "private": private, "generated": generated}
