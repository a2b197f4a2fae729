import sys

data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for i in range(data[0]):
    a, b = data[1 + 2 * i], data[2 + 2 * i]
    r = a % b
    out.append(b - a if a < b else min(r, b - r))
print("\n".join(map(str, out)))
