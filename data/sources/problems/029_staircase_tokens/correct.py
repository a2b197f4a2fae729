import sys
from math import isqrt

MOD = 10**9 + 7


def prefix(x):
    """Total value of tokens 1..x (exact)."""
    if x <= 0:
        return 0
    m = (isqrt(8 * x + 1) - 1) // 2  # largest m with m(m+1)/2 <= x
    full = m * (m + 1) * (2 * m + 1) // 6
    return full + (m + 1) * (x - m * (m + 1) // 2)


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    out = []
    for i in range(q):
        l, r = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        out.append((prefix(r) - prefix(l - 1)) % MOD)
    print("\n".join(map(str, out)))


main()
