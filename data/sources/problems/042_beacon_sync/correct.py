import sys
from math import gcd


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    a, mod = 0, 1  # all solutions so far: a + mod * k
    for i in range(n):
        r, m = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        g = gcd(mod, m)
        if (r - a) % g:
            print(-1)
            return
        step = m // g
        t = ((r - a) // g) % step * pow(mod // g, -1, step) % step if step > 1 else 0
        a += mod * t
        mod *= step
        a %= mod
    print(a)


main()
