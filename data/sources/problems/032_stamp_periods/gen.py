def rand_str(rng, n, alpha):
    return "".join(rng.choice(alpha) for _ in range(n))


def periodic(rng, n, base_len, alpha, flips=0):
    base = rand_str(rng, base_len, alpha)
    s = list((base * (n // base_len + 1))[:n])
    for _ in range(flips):
        s[rng.randrange(n)] = rng.choice(alpha)
    return "".join(s)


def fib_word(n):
    a, b = "a", "ab"
    while len(b) < n:
        a, b = b, b + a
    return b[:n]


def generate(rng):
    public = ["abaabab\n"]
    private = [
        "z\n",
        "zz\n",
        "ab\n",
        rand_str(rng, 12, "ab") + "\n",
        periodic(rng, 40, 3, "abc", 2) + "\n",
        fib_word(1000) + "\n",
        "a" * 10**5 + "\n",
        rand_str(rng, 10**5, "abcdefghijklmnopqrstuvwxyz") + "\n",
        periodic(rng, 30000, 7, "ab", 3) + "\n",
        ("ab" * 15000)[:29999] + "b\n",
    ]
    generated = [periodic(rng, 2000, rng.randint(1, 50), "abc", rng.randint(0, 5)) + "\n" for _ in range(3)]
    return {"public": public, "private": private, "generated": generated}
