import sys

MOD = 998244353


def main():
    n = int(sys.stdin.read().split()[0])
    C = [[1] * (i + 1) for i in range(n + 1)]
    for i in range(2, n + 1):
        for j in range(1, i):
            C[i][j] = (C[i - 1][j - 1] + C[i - 1][j]) % MOD
    p2 = [1] * (n * n // 4)  # exponents go up to floor(k^2 / 4) inclusive
    for i in range(1, len(p2)):
        p2[i] = p2[i - 1] * 2 % MOD
    b = [sum(C[k][j] * p2[j * (k - j)] for j in range(k + 1)) % MOD for k in range(n + 1)]
    c = [0] * (n + 1)
    inv2 = (MOD + 1) // 2
    out = []
    for k in range(1, n + 1):
        s = sum(C[k - 1][j - 1] * c[j] % MOD * b[k - j] for j in range(1, k))
        c[k] = (b[k] - s) % MOD
        out.append(c[k] * inv2 % MOD)
    print("\n".join(map(str, out)))


main()
