import sys
from math import isqrt

MOD = 10**9 + 7


def main():
    n = int(sys.stdin.buffer.read().split()[0])
    r = isqrt(n)
    total = 0
    for d in range(1, r + 1):
        total += d * (n // d)  # small divisors directly
        q = n // d
        if q != d:
            total += q * d  # pair each small d with the large divisor n // d
    print(total % MOD)


main()
