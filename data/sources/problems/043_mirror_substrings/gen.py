def rand_str(rng, n, alpha):
    return "".join(rng.choice(alpha) for _ in range(n))


def generate(rng):
    public = ["abaab\n"]
    blocks = []
    while sum(map(len, blocks)) < 80000:
        half = rand_str(rng, rng.randint(1, 300), "ab")
        blocks.append(half + rng.choice(["", "c"]) + half[::-1])
    private = [
        "q\n",
        "zz\n",
        "xy\n",
        rand_str(rng, 10, "ab") + "\n",
        rand_str(rng, 200, "abc") + "\n",
        "a" * 150000 + "\n",
        rand_str(rng, 100000, "ab") + "\n",
        "".join(blocks)[:80000] + "\n",
    ]
    generated = [rand_str(rng, 3000, "ab") + "\n", ("abcba" * 500) + "\n"]
    return {"public": public, "private": private, "generated": generated}
