import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    printers = []
    hi = None
    for i in range(n):
        t, c, r = int(data[2 + 3 * i]), int(data[3 + 3 * i]), int(data[4 + 3 * i])
        cycle = c * t + r
        printers.append((t, c, cycle))
        alone = ((k - 1) // c) * cycle + ((k - 1) % c + 1) * t
        if hi is None or alone < hi:
            hi = alone
    lo = 0  # at time 0 nothing is ready (k >= 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        total = 0
        for t, c, cycle in printers:
            q, rem = divmod(mid, cycle)
            total += q * c + min(c, rem // t)
            if total >= k:
                break
        if total >= k:
            hi = mid
        else:
            lo = mid
    print(hi)


main()
