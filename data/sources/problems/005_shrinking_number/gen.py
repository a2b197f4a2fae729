def number(rng, digits):
    return str(rng.randint(1, 9)) + "".join(rng.choice("0123456789") for _ in range(digits - 1))


def generate(rng):
    public = ["9875\n"]
    private = [
        "1\n",
        "9\n",
        "10\n",
        "18\n",
        "999999999999999999\n",
        number(rng, 15) + "\n",
        "9" * 100000 + "\n",
        "1" + "0" * 99999 + "\n",
        number(rng, 100000) + "\n",
    ]
    generated = [number(rng, rng.randint(1, 18)) + "\n" for _ in range(3)] + [number(rng, 5000) + "\n"]
    return {"public": public, "private": private, "generated": generated}
