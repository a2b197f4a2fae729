def generate(rng):
    public = ["6\n"]
    private = ["1\n", "2\n", "10\n", "1000\n", f"{rng.randint(10**5, 10**6)}\n", "1000000\n",
               f"{rng.randint(10**9, 10**10)}\n", "9999999999\n", "10000000000\n", f"{2**33 + 12345}\n"]
    generated = [f"{rng.randint(1, 10**4)}\n", f"{rng.randint(10**6, 10**8)}\n"]
    return {"public": public, "private": private, "generated": generated}
