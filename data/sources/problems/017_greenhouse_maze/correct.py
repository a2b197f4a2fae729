import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
w = m + 2
free = bytearray((n + 2) * w)  # a border of blocked tiles around the greenhouse
start = end = -1
for r in range(n):
    row = data[2 + r]
    base = (r + 1) * w + 1
    for c in range(m):
        ch = row[c]
        if ch != 35:  # '#'
            free[base + c] = 1
            if ch == 83:  # 'S'
                start = base + c
            elif ch == 69:  # 'E'
                end = base + c
dist = [-1] * len(free)
dist[start] = 0
queue = [start]
for v in queue:
    if v == end:
        break
    dv = dist[v] + 1
    for u in (v - 1, v + 1, v - w, v + w):
        if free[u] and dist[u] < 0:
            dist[u] = dv
            queue.append(u)
print(dist[end])
