import sys


def floor_sum(n, m, a, b):
    ans = 0
    while True:
        if a >= m:
            ans += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            ans += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return ans
        n = int(y_max / m)  # true division: y_max can be close to 10^18
        b = y_max - n * m
        m, a = a, m


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    p = 1
    for _ in range(t):
        n, m, a, b, c = (int(x) for x in data[p:p + 5])
        p += 5
        out.append(n - (floor_sum(n, m, a, b + m - c) - floor_sum(n, m, a, b)))
    print("\n".join(map(str, out)))


main()
