import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    c = [[int(x) for x in data[1 + j * n:1 + (j + 1) * n]] for j in range(n)]
    full = 1 << n
    # col[mask][i]: extra time of experiment i if it runs right after exactly the experiments in mask
    col = [None] * full
    col[0] = [0] * n
    dp = [0] * full
    for mask in range(1, full):
        low = (mask & -mask).bit_length() - 1
        col[mask] = [x + y for x, y in zip(col[mask & (mask - 1)], c[low])]
    for mask in range(1, full):  # the last experiment of mask is i
        dp[mask] = min([dp[mask ^ (1 << i)] + col[mask ^ (1 << i)][i] for i in range(n) if mask >> i & 1])
    print(dp[full - 1])


main()
