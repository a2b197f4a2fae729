import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.read().split()
    n, m, s = int(data[0]), int(data[1]), int(data[2])
    sig = [int(x) - 1 for x in data[3:3 + s]]
    A = data[3 + s:3 + s + m]
    succ = [[j for j in range(m) if A[i][j] == "1"] for i in range(m)]
    pos = {d: b for b, d in enumerate(sig)}
    full = (1 << s) - 1
    ans = 0
    for first in range(m):  # fix the first dish, then walk day by day
        dp = {}
        dp[(first, 1 << pos[first] if first in pos else 0)] = 1
        for _ in range(n - 1):
            nd = {}
            for (d, mask), ways in dp.items():
                for e in succ[d]:
                    key = (e, mask | (1 << pos[e]) if e in pos else mask)
                    nd[key] = (nd.get(key, 0) + ways) % MOD
            dp = nd
        for (d, mask), ways in dp.items():
            if mask == full and A[d][first] == "1":
                ans += ways
    print(ans % MOD)


main()
