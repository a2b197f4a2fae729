import sys


def main():
    data = sys.stdin.buffer.read().split()
    m, q = int(data[0]), int(data[1])
    primes = []
    x = m
    p = 2
    while p * p <= x:
        if x % p == 0:
            primes.append(p)
            while x % p == 0:
                x //= p
        p += 1 if p == 2 else 2
    if x > 1:
        primes.append(x)
    # square-free divisors with Moebius signs
    terms = [(1, 1)]
    for p in primes:
        terms += [(d * p, -s) for d, s in terms]
    divs = [d for d, s in terms]
    signs = [s for d, s in terms]

    def coprime_upto(n):
        return sum(s * (n // d) for d, s in zip(divs, signs))

    out = []
    for j in range(q):
        l, r = int(data[2 + 2 * j]), int(data[3 + 2 * j])
        out.append(coprime_upto(r) - coprime_upto(l - 1))
    print("\n".join(map(str, out)))


main()
