import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    printers = []
    for i in range(n):
        t, c, r = int(data[2 + 3 * i]), int(data[3 + 3 * i]), int(data[4 + 3 * i])
        printers.append((t, c, c * t + r))
    lo, hi = 0, 4 * 10**18
    while hi - lo > 1:
        mid = (lo + hi) // 2
        total = 0
        for t, c, cycle in printers:
            q, rem = divmod(mid, cycle)
            total += q * c + rem // t  # forgets that at most c pages fit in one streak
        if total >= k:
            hi = mid
        else:
            lo = mid
    print(hi)


main()
