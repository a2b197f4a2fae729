import sys
from collections import deque


def main():
    data = sys.stdin.read().split()
    r, c = int(data[0]), int(data[1])
    g = data[2:2 + r]
    for i in range(r):
        for j in range(c):
            if g[i][j] == "S":
                s = (i, j)
            elif g[i][j] == "T":
                t = (i, j)
    DR = (-1, 0, 1, 0)
    DC = (0, 1, 0, -1)
    INF = 10**9
    dist = [[[INF] * 4 for _ in range(c)] for _ in range(r)]
    dq = deque()
    for k in range(4):
        dist[s[0]][s[1]][k] = 0
        dq.append((0, s[0], s[1], k))
    while dq:
        d, i, j, k = dq.popleft()
        if d > dist[i][j][k]:
            continue
        if (i, j) == t:
            print(d)
            return
        ni, nj = i + DR[k], j + DC[k]
        if ni >= 0 and nj >= 0 and g[ni][nj] != "#" and dist[ni][nj][k] > d:
            dist[ni][nj][k] = d
            dq.appendleft((d, ni, nj, k))
        if g[i][j] != "*":
            for k2 in ((k + 1) % 4, (k + 3) % 4):
                if dist[i][j][k2] > d + 1:
                    dist[i][j][k2] = d + 1
                    dq.append((d + 1, i, j, k2))
    print(-1)


main()
