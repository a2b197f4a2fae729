import sys

data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for i in range(data[0]):
    n, r, c = data[1 + 3 * i: 4 + 3 * i]
    # the second diagonal was copied from the first one
    diag = min(r - 1, c - 1) + min(n - r, n - c) + min(r - 1, c - 1) + min(n - r, n - c)
    out.append(2 * (n - 1) + diag)
print("\n".join(map(str, out)))
