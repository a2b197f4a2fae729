import sys


def vp(x, p):
    c = 0
    while x % p == 0:
        x //= p
        c += 1
    return c


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    for i in range(t):
        n, p, e = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        cur = 0  # exponent of p in C(n, k), updated along the row
        cnt = 1 if e == 0 else 0
        for k in range(1, n + 1):
            cur += vp(n - k + 1, p) - vp(k, p)
            if cur == e:
                cnt += 1
        out.append(cnt)
    print("\n".join(map(str, out)))


main()
