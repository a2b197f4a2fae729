import sys
from bisect import bisect_right
from itertools import accumulate

data = sys.stdin.buffer.read().split()
n, d = int(data[0]), int(data[1])
w = list(map(int, data[2:2 + n]))
pref = [0] + list(accumulate(w))


def fits(cap):
    """Greedy: each day takes as many crates as possible; stop as soon as d days are not enough."""
    pos = trips = 0
    while pos < n:
        trips += 1
        if trips > d:
            return False
        pos = bisect_right(pref, pref[pos] + cap) - 1
    return True


lo, hi = max(w), pref[n]
while lo < hi:
    mid = (lo + hi) // 2
    if fits(mid):
        hi = mid
    else:
        lo = mid + 1
print(lo)
