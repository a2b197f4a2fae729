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

    def C(a, b):
        return 0 if b < 0 or b > a else fact[a] * ifact[b] % MOD * ifact[a - b] % MOD

    def within(n, h):
        if h < 0:
            return 0
        w = h + 2
        # reflect once in each wall
        total = 0
        for k in (-1, 0, 1):
            total += C(2 * n, n + k * w) - C(2 * n, n + k * w - 1)
        return total % MOD

    print("\n".join(str((within(n, h) - within(n, h - 1)) % MOD) for n, h in tests))


main()
