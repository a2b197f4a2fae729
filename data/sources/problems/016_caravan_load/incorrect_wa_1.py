import sys


def trips_needed(w, cap):
    trips, load = 1, 0
    for x in w:
        if load + x > cap:  # a crate heavier than cap still gets "carried" on a new day
            trips += 1
            load = 0
        load += x
    return trips


data = sys.stdin.buffer.read().split()
n, d = int(data[0]), int(data[1])
w = list(map(int, data[2:2 + n]))
lo, hi = 1, sum(w)
while lo < hi:
    mid = (lo + hi) // 2
    if trips_needed(w, mid) <= d:
        hi = mid
    else:
        lo = mid + 1
print(lo)
