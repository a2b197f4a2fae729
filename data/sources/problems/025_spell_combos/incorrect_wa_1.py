import sys

data = list(map(int, sys.stdin.buffer.read().split()))
n, M, H = data[0], data[1], data[2]
count = 0
for mask in range(1 << n):  # includes the empty combination
    cost = dmg = 0
    for i in range(n):
        if mask >> i & 1:
            cost += data[3 + 2 * i]
            dmg += data[4 + 2 * i]
    if cost <= M and dmg >= H:
        count += 1
print(count)
