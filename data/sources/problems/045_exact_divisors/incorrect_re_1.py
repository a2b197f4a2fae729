import sys
from math import gcd, comb


def main():
    data = sys.stdin.read().split()
    n, k = int(data[0]), int(data[1])
    a = [int(x) for x in data[2:2 + k]]
    full = 1 << k
    lcm = [1] * full
    S = [0] * (k + 1)
    S[0] = n
    for mask in range(1, full):
        low = mask & -mask
        b = low.bit_length() - 1
        prev = lcm[mask ^ low]
        v = prev // gcd(prev, a[b]) * a[b]
        if v > n:
            lcm[mask] = 0  # "too big" marker, but supersets reuse it below
            continue
        lcm[mask] = v
        S[bin(mask).count("1")] += n // v
    res = []
    for m in range(k + 1):
        res.append(sum((-1) ** (j - m) * comb(j, m) * S[j] for j in range(m, k + 1)))
    print(" ".join(map(str, res)))


main()
