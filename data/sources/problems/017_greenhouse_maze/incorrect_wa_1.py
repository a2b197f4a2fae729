import sys

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
stack = [start]
while stack:  # a stack explores depth-first, so the first distance found need not be the shortest
    r, c = stack.pop()
    for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
        if 0 <= nr < n and 0 <= nc < m and g[nr][nc] != "#" and (nr, nc) not in dist:
            dist[(nr, nc)] = dist[(r, c)] + 1
            stack.append((nr, nc))
print(dist.get(end, -1))
