import sys
from math import gcd


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    k = int(data[1])
    a = [int(x) for x in data[2:2 + k]]
    big = n + 1  # any lcm above n behaves the same: floor(n / lcm) = 0
    full = 1 << k
    lcm = [1] * full
    pop = [0] * full
    S = [0] * (k + 1)
    S[0] = n
    for mask in range(1, full):
        low = mask & -mask
        b = low.bit_length() - 1
        prev = lcm[mask ^ low]
        pop[mask] = pop[mask ^ low] + 1
        if prev >= big:
            lcm[mask] = big
            continue
        v = prev // gcd(prev, a[b]) * a[b]
        if v > n:
            v = big
        lcm[mask] = v
        S[pop[mask]] += n // v
    # binomials
    C = [[0] * (k + 1) for _ in range(k + 1)]
    for i in range(k + 1):
        C[i][0] = 1
        for j in range(1, i + 1):
            C[i][j] = C[i - 1][j - 1] + C[i - 1][j]
    res = []
    for m in range(k + 1):
        tot = 0
        for j in range(m, k + 1):
            term = C[j][m] * S[j]
            tot += -term if (j - m) & 1 else term
        res.append(tot)
    print(" ".join(map(str, res)))


main()
