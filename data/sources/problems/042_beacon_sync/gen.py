from math import gcd

PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]


def fmt(pairs):
    return f"{len(pairs)}\n" + "".join(f"{r} {m}\n" for r, m in pairs)


def lcm(a, b):
    return a // gcd(a, b) * b


def smooth_base(rng, limit=10**18):
    """A number L <= limit with many small prime factors."""
    L = 1
    factors = {}
    while True:
        p = rng.choice(PRIMES)
        if L * p > limit:
            break
        L *= p
        factors[p] = factors.get(p, 0) + 1
    return L, factors


def divisor(rng, factors, cap=10**9):
    d = 1
    items = list(factors.items())
    rng.shuffle(items)
    for p, e in items:
        k = rng.randint(0, e)
        while k and d * p**k > cap:
            k -= 1
        d *= p**k
    return d


def consistent(rng, moduli, hidden):
    return [(hidden % m, m) for m in moduli]


def generate(rng):
    public = [fmt([(2, 6), (5, 9), (0, 4)])]
    private = [
        fmt([(0, 1)]),
        fmt([(5, 7)]),
        fmt([(1, 2), (0, 4)]),
        fmt([(1, 2), (2, 3), (3, 5), (0, 1)]),
        fmt([(3, 10), (8, 15), (0, 6)]),
        fmt([(rng.randint(0, m - 1), m) for m in (rng.randint(1, 12) for _ in range(4))]),
    ]
    # two large primes: the answer is close to 10^18
    p1, p2 = 999999937, 999999929
    x = rng.randint(0, p1 * p2 - 1)
    private.append(fmt([(x % p1, p1), (x % p2, p2)]))
    private.append(fmt([(p1 - 1, p1), (p2 - 1, p2), (0, 1)]))
    L, factors = smooth_base(rng)
    moduli = [divisor(rng, factors) for _ in range(5000)]
    hidden = rng.randint(0, L - 1)
    private.append(fmt(consistent(rng, moduli, hidden)))
    bad = consistent(rng, moduli, hidden)
    j = max(range(len(bad)), key=lambda i: bad[i][1])
    bad[j] = ((bad[j][0] + 1) % bad[j][1], bad[j][1])
    private.append(fmt(bad))
    # moduli sharing large factors of 2, 3 and 7
    L2 = 2**29 * 3**17 * 7
    moduli = []
    while len(moduli) < 2000:
        m = 2**rng.randint(0, 29) * 3**rng.randint(0, 17) * rng.choice((1, 7))
        if m <= 10**9:
            moduli.append(m)
    private.append(fmt(consistent(rng, moduli, rng.randint(0, L2 - 1))))
    generated = []
    for _ in range(3):
        L, factors = smooth_base(rng, 10**12)
        generated.append(fmt(consistent(rng, [divisor(rng, factors) for _ in range(50)], rng.randint(0, L - 1))))
    return {"public": public, "private": private, "generated": generated}
