import sys


def floor_sum(n, m, a, b):
    # sum of floor((a * x + b) / m) for x = 0 .. n - 1  (a, b >= 0)
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
        n, b = divmod(y_max, m)
        m, a = a, m


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    p = 1
    for _ in range(t):
        n, m, a, b, c = (int(x) for x in data[p:p + 5])
        p += 5
        # [(a x + b) mod m >= c] = floor((a x + b + m - c) / m) - floor((a x + b) / m)
        bright_not = floor_sum(n, m, a, b + m - c) - floor_sum(n, m, a, b)
        out.append(n - bright_not)
    print("\n".join(map(str, out)))


main()
