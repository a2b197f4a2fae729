import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    N, k, m = int(data[0]), int(data[1]), int(data[2])
    fixed = [(int(data[3 + 2 * i]), int(data[4 + 2 * i])) for i in range(m)]
    if m == 0:
        print(k * pow(k - 1, N - 1, MOD) % MOD)
        return
    ans = pow(k - 1, fixed[0][0] - 1, MOD) * pow(k - 1, N - fixed[-1][0], MOD) % MOD
    for (p, a), (q, b) in zip(fixed, fixed[1:]):
        g = q - p
        if g == 1:
            ways = 1 if a != b else 0
        else:
            # free bulbs avoid their left neighbour; the last free one also avoids bulb q
            ways = pow(k - 1, g - 2, MOD) * (k - 2 if a != b else k - 1) % MOD
        ans = ans * ways % MOD
    print(ans)


main()
