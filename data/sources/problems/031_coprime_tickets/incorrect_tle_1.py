import sys
from math import gcd


def main():
    data = sys.stdin.buffer.read().split()
    m, q = int(data[0]), int(data[1])
    out = []
    for j in range(q):
        l, r = int(data[2 + 2 * j]), int(data[3 + 2 * j])
        out.append(sum(1 for x in range(l, r + 1) if gcd(x, m) == 1))
    print("\n".join(map(str, out)))


main()
