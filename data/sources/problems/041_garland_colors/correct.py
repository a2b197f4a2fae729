import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    N, k, m = int(data[0]), int(data[1]), int(data[2])
    fixed = [(int(data[3 + 2 * i]), int(data[4 + 2 * i])) for i in range(m)]
    if m == 0:
        print(k * pow(k - 1, N - 1, MOD) % MOD)
        return
    inv_k = pow(k, MOD - 2, MOD)
    ans = pow(k - 1, fixed[0][0] - 1, MOD) * pow(k - 1, N - fixed[-1][0], MOD) % MOD
    for (p, a), (q, b) in zip(fixed, fixed[1:]):
        g = q - p
        # walks of length g between two colours of the complete graph on k colours
        big = pow(k - 1, g, MOD)
        sign = 1 if g % 2 == 0 else MOD - 1
        if a == b:
            ways = (big + (k - 1) * sign) * inv_k % MOD
        else:
            ways = (big - sign) * inv_k % MOD
        ans = ans * ways % MOD
    print(ans)


main()
