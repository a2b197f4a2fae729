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
    prev_seen = -1
    budget = 0
    while True:  # iterative deepening on the number of rotations
        best = {}
        dq = deque()
        for k in range(4):
            best[(s[0], s[1], k)] = 0
            dq.append((s[0], s[1], k))
        found = False
        while dq:
            i, j, k = dq.popleft()
            used = best[(i, j, k)]
            if (i, j) == t:
                found = True
                break
            ni, nj = i + DR[k], j + DC[k]
            if 0 <= ni < r and 0 <= nj < c and g[ni][nj] != "#":
                key = (ni, nj, k)
                if best.get(key, budget + 1) > used:
                    best[key] = used
                    dq.appendleft(key)
            if g[i][j] != "*" and used < budget:
                for k2 in ((k + 1) % 4, (k + 3) % 4):
                    key = (i, j, k2)
                    if best.get(key, budget + 1) > used + 1:
                        best[key] = used + 1
                        dq.append(key)
        if found:
            print(budget)
            return
        if len(best) == prev_seen:
            print(-1)
            return
        prev_seen = len(best)
        budget += 1


main()
