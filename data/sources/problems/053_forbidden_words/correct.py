import sys
from collections import deque

MOD = 998244353


def mat_mul(X, Y):
    cols = list(zip(*Y))
    return [[sum(a * b for a, b in zip(row, col)) % MOD for col in cols] for row in X]


def vec_mul(v, M):
    cols = zip(*M)
    return [sum(a * b for a, b in zip(v, col)) % MOD for col in cols]


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
    # Aho-Corasick: complete the transitions, inherit "bad" along suffix links
    link = [0] * len(go)
    q = deque()
    for x in range(c):
        if go[0][x] == -1:
            go[0][x] = 0
        else:
            link[go[0][x]] = 0
            q.append(go[0][x])
    while q:
        v = q.popleft()
        bad[v] = bad[v] or bad[link[v]]
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
            u = go[v][x]
            if not bad[u]:
                M[idx[v]][idx[u]] += 1
    vec = [0] * m
    vec[idx[0]] = 1
    while n:
        if n & 1:
            vec = vec_mul(vec, M)
        n >>= 1
        if n:
            M = mat_mul(M, M)
    print(sum(vec) % MOD)


main()
