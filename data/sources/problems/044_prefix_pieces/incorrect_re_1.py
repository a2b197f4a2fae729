import sys
from functools import lru_cache


def main():
    t, s = sys.stdin.read().split()
    m, n = len(t), len(s)
    MOD = 998244353
    w = t + "#" + s
    L = len(w)
    z = [0] * L
    l = r = 0
    for i in range(1, L):
        k = min(r - i, z[i - l]) if i < r else 0
        while i + k < L and w[k] == w[i + k]:
            k += 1
        z[i] = k
        if i + k > r:
            l, r = i, i + k
    reach = z[m + 1:]
    INF = float("inf")

    @lru_cache(maxsize=None)
    def solve(i):  # (min pieces, ways) to print s[i:]; recursion depth grows with |s|
        if i == n:
            return 0, 1
        best, ways = INF, 0
        for j in range(i + 1, i + reach[i] + 1):
            b, c = solve(j)
            best = min(best, b + 1)
            ways = (ways + c) % MOD
        return best, ways

    best, ways = solve(0)
    print("-1 0" if best == INF else f"{best} {ways}")


main()
