import sys

data = sys.stdin.buffer.read().split()
t = int(data[0])
out = []
for i in range(t):
    n, k = int(data[1 + 2 * i]), int(data[2 + 2 * i])
    out.append(2 * ((n + k - 1) // k) - 1)
print("\n".join(map(str, out)))
