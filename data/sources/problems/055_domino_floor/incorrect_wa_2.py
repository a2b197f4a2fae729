import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    g = [data[2 + i] for i in range(n)]
    size = 1 << m
    dp = [0] * size
    dp[0] = 1
    for i in range(n):
        for j in range(m):
            bit = 1 << j
            ndp = [0] * size
            blocked = g[i][j] == 35
            can_down = i + 1 < n  # planks may be pushed onto a pillar ...
            can_right = j + 1 < m
            for mask in range(size):
                v = dp[mask]
                if not v:
                    continue
                if blocked:  # ... and the pillar square is simply skipped
                    ndp[mask & ~bit] += v
                    continue
                if mask & bit:
                    ndp[mask ^ bit] += v
                    continue
                if can_down:
                    ndp[mask | bit] += v
                if can_right and not mask & (bit << 1):
                    ndp[mask | (bit << 1)] += v
            dp = [x % MOD for x in ndp]
    print(dp[0])


main()
