import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    g = [data[2 + i] for i in range(n)]
    size = 1 << m
    # bit j of the profile: for columns >= the current one, "this cell of the current row is
    # already covered"; for columns < the current one, "this cell of the next row is covered"
    dp = [0] * size
    dp[0] = 1
    for i in range(n):
        row = g[i]
        nrow = g[i + 1] if i + 1 < n else None
        for j in range(m):
            bit = 1 << j
            ndp = [0] * size
            if row[j] == 35:  # '#'
                for mask in range(size):
                    v = dp[mask]
                    if v and not mask & bit:
                        ndp[mask] += v
            else:
                can_down = nrow is not None and nrow[j] != 35
                right = bit << 1
                can_right = j + 1 < m and row[j + 1] != 35
                for mask in range(size):
                    v = dp[mask]
                    if not v:
                        continue
                    if mask & bit:
                        ndp[mask ^ bit] += v
                        continue
                    if can_down:
                        ndp[mask | bit] += v
                    if can_right and not mask & right:
                        ndp[mask | right] += v
            dp = [x % MOD for x in ndp]
    print(dp[0] % MOD)


main()
