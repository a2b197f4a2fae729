import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    h, w, k = int(data[0]), int(data[1]), int(data[2])
    pts = sorted((int(data[3 + 2 * i]) - 1, int(data[4 + 2 * i]) - 1) for i in range(k))
    N = h + w
    fact = [1] * (N + 1)
    for i in range(1, N + 1):
        fact[i] = fact[i - 1] * i % MOD
    ifact = [1] * (N + 1)
    ifact[N] = pow(fact[N], MOD - 2, MOD)
    for i in range(N, 0, -1):
        ifact[i - 1] = ifact[i] * i % MOD
    X = [p[0] for p in pts]
    Y = [p[1] for p in pts]
    g1 = []  # paths to cell i on which i is the first cracked cell
    d12 = []  # g1 - g2, where g2: paths on which i is the second cracked cell
    g2 = []
    for i in range(k):
        xi, yi = X[i], Y[i]
        s1 = 0
        s2 = 0
        for j in range(i):
            yj = Y[j]
            if yj <= yi:
                xj = X[j]
                p = fact[xi - xj + yi - yj] * ifact[xi - xj] % MOD * ifact[yi - yj]
                s1 += g1[j] * p
                s2 += d12[j] * p
        a = (fact[xi + yi] * ifact[xi] % MOD * ifact[yi] - s1) % MOD
        b = s2 % MOD
        g1.append(a)
        g2.append(b)
        d12.append((a - b) % MOD)
    tx, ty = h - 1, w - 1
    ans = fact[tx + ty] * ifact[tx] % MOD * ifact[ty]
    for j in range(k):
        ans -= g2[j] * (fact[tx - X[j] + ty - Y[j]] * ifact[tx - X[j]] % MOD * ifact[ty - Y[j]] % MOD)
    print(ans % MOD)


main()
