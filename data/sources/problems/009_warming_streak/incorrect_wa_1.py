import sys

data = sys.stdin.buffer.read().split()
t = list(map(int, data[1:1 + int(data[0])]))
best = cur = 1
for i in range(1, len(t)):
    cur = cur + 1 if t[i] >= t[i - 1] else 1  # equal temperatures do not continue a streak
    best = max(best, cur)
print(best)
