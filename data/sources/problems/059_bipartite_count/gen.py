def generate(rng):
    public = ["4\n"]
    private = [f"{n}\n" for n in (1, 2, 3, 5, 6, 7, 10, 57, rng.randint(100, 400), 1000)]
    generated = [f"{rng.randint(400, 999)}\n", "999\n"]
    return {"public": public, "private": private, "generated": generated}
