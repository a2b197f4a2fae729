import sys

MOD = 998244353


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    tests = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(t)]
    N = 2 * max(n for n, _ in tests)
    fact = [1] * (N + 1)
    for i in range(1, N + 1):
        fact[i] = fact[i - 1] * i % MOD
    ifact = [1] * (N + 1)
    ifact[N] = pow(fact[N], MOD - 2, MOD)
    for i in range(N, 0, -1):
        ifact[i - 1] = ifact[i] * i % MOD

    def within(n, h):
        # paths 0 -> 0 of length 2n inside [0, h]: reflections in the lines -1 and h + 1
        if h < 0:
            return 0
        w = h + 2
        total = 0
        lo = -(n // w) - 1
        hi = n // w + 1
        for k in range(lo, hi + 1):
            j = n + k * w
            if 0 <= j <= 2 * n:
                total += ifact[j] * ifact[2 * n - j]
            j -= 1
            if 0 <= j <= 2 * n:
                total -= ifact[j] * ifact[2 * n - j]
        return total % MOD * fact[2 * n] % MOD

    out = []
    for n, h in tests:
        out.append((within(n, h) - within(n, h - 1)) % MOD)
    print("\n".join(map(str, out)))


main()
