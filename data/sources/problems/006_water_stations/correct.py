import sys

data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for i in range(data[0]):
    l, r, k = data[1 + 3 * i: 4 + 3 * i]
    out.append(r // k - (l - 1) // k)
print("\n".join(map(str, out)))
