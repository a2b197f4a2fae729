import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    h, w, k = int(data[0]), int(data[1]), int(data[2])
    pts = sorted((int(data[3 + 2 * i]) - 1, int(data[4 + 2 * i]) - 1) for i in range(k))
    N = max(h, w) + 1  # a route has h + w - 2 steps, so this table is too short
    fact = [1] * (N + 1)
    for i in range(1, N + 1):
        fact[i] = fact[i - 1] * i % MOD
    ifact = [pow(x, MOD - 2, MOD) for x in fact]

    def paths(dx, dy):
        if dx < 0 or dy < 0:
            return 0
        return fact[dx + dy] * ifact[dx] % MOD * ifact[dy] % MOD

    g1, g2 = [], []
    for i in range(k):
        xi, yi = pts[i]
        s1 = s2 = 0
        for j in range(i):
            p = paths(xi - pts[j][0], yi - pts[j][1])
            s1 += g1[j] * p
            s2 += (g1[j] - g2[j]) * p
        g1.append((paths(xi, yi) - s1) % MOD)
        g2.append(s2 % MOD)
    ans = paths(h - 1, w - 1)
    for j in range(k):
        ans -= g2[j] * paths(h - 1 - pts[j][0], w - 1 - pts[j][1])
    print(ans % MOD)


main()
