import sys
from math import lcm


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    pairs = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n)]
    big = lcm(*[m for _, m in pairs])
    r0, m0 = max(pairs, key=lambda p: p[1])
    t = r0
    while t < big:  # jump along the flashes of the slowest beacon
        if all(t % m == r for r, m in pairs):
            print(t)
            return
        t += m0
    print(-1)


main()
