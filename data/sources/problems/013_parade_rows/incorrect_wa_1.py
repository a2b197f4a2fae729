import sys

data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for i in range(data[0]):
    a, b = data[1 + 2 * i], data[2 + 2 * i]
    r = a % b
    out.append(min(r, b - r))  # may shrink the band to zero members
print("\n".join(map(str, out)))
