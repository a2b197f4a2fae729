import sys

data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for i in range(data[0]):
    n, r, c = data[1 + 3 * i: 4 + 3 * i]
    seen = 0
    for dr, dc in ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)):
        x, y = r + dr, c + dc
        while 1 <= x <= n and 1 <= y <= n:  # walk to the border field by field
            seen += 1
            x += dr
            y += dc
    out.append(seen)
print("\n".join(map(str, out)))
