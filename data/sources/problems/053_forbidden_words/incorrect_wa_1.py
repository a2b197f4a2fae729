import sys
from collections import deque

MOD = 998244353


def mat_mul(X, Y):
    cols = list(zip(*Y))
    return [[sum(a * b for a, b in zip(row, col)) % MOD for col in cols] for row in X]


def main():
    data = sys.stdin.buffer.read().split()
    n, c, k = int(data[0]), int(data[1]), int(data[2])
    words = [w.decode() for w in data[3:3 + k]]
    go = [[-1] * c]
    bad = [False]
    for w in words:
        v = 0
        for ch in w:
            x = ord(ch) - 97
            if go[v][x] == -1:
                go[v][x] = len(go)
                go.append([-1] * c)
                bad.append(False)
            v = go[v][x]
        bad[v] = True
    link = [0] * len(go)
    q = deque()
    for x in range(c):
        if go[0][x] == -1:
            go[0][x] = 0
        else:
            q.append(go[0][x])
    while q:
        v = q.popleft()
        for x in range(c):
            u = go[v][x]
            if u == -1:
                go[v][x] = go[link[v]][x]
            else:
                link[u] = go[link[v]][x]
                q.append(u)
    alive = [v for v in range(len(go)) if not bad[v]]
    idx = {v: i for i, v in enumerate(alive)}
    m = len(alive)
    M = [[0] * m for _ in range(m)]
    for v in alive:
        for x in range(c):
            if not bad[go[v][x]]:
                M[idx[v]][idx[go[v][x]]] += 1
    R = [[int(i == j) for j in range(m)] for i in range(m)]
    while n:
        if n & 1:
            R = mat_mul(R, M)
        M = mat_mul(M, M)
        n >>= 1
    print(sum(R[idx[0]]) % MOD)


main()
