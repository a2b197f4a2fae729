import sys

MOD = 10**9 + 7


def main():
    n = int(sys.stdin.buffer.read().split()[0])
    # sum over d of d * floor(n / d), grouping the d with equal floor(n / d)
    total = 0
    d = 1
    while d <= n:
        q = n // d
        last = n // q
        total += q * ((d + last) * (last - d + 1) // 2)
        d = last + 1
    print(total % MOD)


main()
