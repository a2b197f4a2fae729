import sys

data = sys.stdin.buffer.read().split()
n, q = int(data[0]), int(data[1])
prices = list(map(int, data[2:2 + n]))
out = []
for b in map(int, data[2 + n:2 + n + q]):
    count = 0
    for p in prices:
        if p <= b:
            count += 1
    out.append(count)
print(" ".join(map(str, out)))
