import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    qs = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(q)]
    top = max(n for n, _ in qs) + 1
    fact = [1] * (top + 1)
    for i in range(1, top + 1):
        fact[i] = fact[i - 1] * i % MOD
    inv = [1] * (top + 1)
    inv[top] = pow(fact[top], MOD - 2, MOD)
    for i in range(top, 0, -1):
        inv[i - 1] = inv[i] * i % MOD

    def comb(a, b):
        if a < 0 or b < 0 or b > a:
            return 0
        return fact[a] * inv[b] % MOD * inv[a - b] % MOD

    out = []
    for n, k in qs:
        if k == 0:
            out.append(1)
        else:
            # no two chosen chairs next to each other: the usual stars-and-bars count
            out.append(comb(n - k + 1, k))  # choose k chairs in a row, none adjacent
    print("\n".join(map(str, out)))


main()
