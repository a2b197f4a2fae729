import sys

MOD = 998244353


def main():
    n = int(sys.stdin.read().split()[0])
    C = [[1] * (i + 1) for i in range(n + 1)]
    for i in range(2, n + 1):
        for j in range(1, i):
            C[i][j] = (C[i - 1][j - 1] + C[i - 1][j]) % MOD
    b = [sum(C[k][j] * pow(2, j * (k - j), MOD) for j in range(k + 1)) % MOD for k in range(n + 1)]
    c = [0] * (n + 1)
    out = []
    for k in range(1, n + 1):
        s = sum(C[k - 1][j - 1] * c[j] % MOD * b[k - j] for j in range(1, k))
        c[k] = (b[k] - s) % MOD
        out.append(c[k])  # every graph is counted once per colouring
    print("\n".join(map(str, out)))


main()
