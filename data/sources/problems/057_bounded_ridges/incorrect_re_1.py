import sys

MOD = 998244353


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    tests = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(t)]
    N = max(n for n, _ in tests) + 1
    fact = [1] * (N + 1)
    for i in range(1, N + 1):
        fact[i] = fact[i - 1] * i % MOD
    ifact = [pow(x, MOD - 2, MOD) for x in fact]

    def within(n, h):
        if h < 0:
            return 0
        w = h + 2
        total = 0
        for k in range(-(n // w) - 1, n // w + 2):
            j = n + k * w
            if 0 <= j <= 2 * n:
                total += ifact[j] * ifact[2 * n - j]
            if 0 <= j - 1 <= 2 * n:
                total -= ifact[j - 1] * ifact[2 * n - j + 1]
        return total % MOD * fact[2 * n] % MOD

    print("\n".join(str((within(n, h) - within(n, h - 1)) % MOD) for n, h in tests))


main()
