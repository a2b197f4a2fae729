import sys

data = sys.stdin.buffer.read().split()
t = int(data[0])
out = []
for i in range(t):
    n, k = int(data[1 + 2 * i]), int(data[2 + 2 * i])
    hours = 0
    while True:  # simulate every crossing
        n -= min(n, k)
        hours += 1
        if n == 0:
            break
        hours += 1
    out.append(hours)
print("\n".join(map(str, out)))
