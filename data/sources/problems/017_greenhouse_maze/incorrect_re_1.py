import sys
from collections import deque

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
g = [data[2 + r].decode() for r in range(n)]
for r in range(n):
    for c in range(m):
        if g[r][c] == "S":
            start = (r, c)
        elif g[r][c] == "E":
            end = (r, c)
dist = {start: 0}
queue = deque([start])
while queue:
    r, c = queue.popleft()
    for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
        # only the lower bounds are checked: g[n] or g[r][m] raises IndexError
        if nr >= 0 and nc >= 0 and g[nr][nc] != "#" and (nr, nc) not in dist:
            dist[(nr, nc)] = dist[(r, c)] + 1
            queue.append((nr, nc))
print(dist.get(end, -1))
