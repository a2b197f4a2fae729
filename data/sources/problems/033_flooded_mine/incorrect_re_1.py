import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n, m, k = int(data[0]), int(data[1]), int(data[2])
    g = [data[3 + r].decode() for r in range(n)]
    INF = float("inf")
    water = [[INF] * m for _ in range(n)]
    q = deque()
    for r in range(n):
        for c in range(m):
            if g[r][c] == "W":
                water[r][c] = 0
                q.append((r, c))
            elif g[r][c] == "S":
                sr, sc = r, c
    while q:
        r, c = q.popleft()
        for rr, cc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if g[rr][cc] != "#" and water[rr][cc] == INF:  # the mine is surely walled in...
                water[rr][cc] = water[r][c] + 1
                q.append((rr, cc))
    dist = [[-1] * m for _ in range(n)]
    dist[sr][sc] = 0
    q.append((sr, sc))
    while q:
        r, c = q.popleft()
        t = dist[r][c] + 1
        for rr, cc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if g[rr][cc] == "#" or dist[rr][cc] != -1:
                continue
            if g[rr][cc] == "E":
                if water[rr][cc] * k >= t:
                    print(t)
                    return
                continue
            if water[rr][cc] * k > t:
                dist[rr][cc] = t
                q.append((rr, cc))
    print(-1)


main()
