import sys
from functools import lru_cache

MOD = 10**9 + 7


def count_submasks_upto(free, limit):
    # number of b with b & ~free == 0 and 0 <= b <= limit
    if limit < 0:
        return 0
    res = 0
    for bit in range(60, -1, -1):
        if limit >> bit & 1:
            if free >> bit & 1:
                res += 1 << bin(free & ((1 << bit) - 1)).count("1")
            else:
                return res + (1 << bin(free & ((1 << bit) - 1)).count("1"))
    return res + 1


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    for i in range(t):
        A, B, C = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        total = 0
        for a in range(min(A, C) + 1):  # every possible setting of the first transmitter
            free = ((1 << 61) - 1) ^ a
            total += count_submasks_upto(free, min(B, C - a))
        out.append(total % MOD)
    print("\n".join(map(str, out)))


main()
