import sys

data = list(map(int, sys.stdin.buffer.read().split()))
n, M, H = data[0], data[1], data[2]
cost, dmg = [0] * (1 << n), [0] * (1 << n)
count = 0
for mask in range(1, 1 << n):
    low = mask & -mask
    i = low.bit_length() - 1
    cost[mask] = cost[mask ^ low] + data[3 + 2 * i]
    dmg[mask] = dmg[mask ^ low] + data[4 + 2 * i]
    if cost[mask] <= M and dmg[mask] >= H:
        count += 1
print(count)
