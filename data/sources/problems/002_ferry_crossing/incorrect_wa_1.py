import sys

data = sys.stdin.buffer.read().split()
t = int(data[0])
out = []
for i in range(t):
    n, k = int(data[1 + 2 * i]), int(data[2 + 2 * i])
    trips = n // k  # forgets the last, partly filled trip
    out.append(2 * trips - 1)
print("\n".join(map(str, out)))
