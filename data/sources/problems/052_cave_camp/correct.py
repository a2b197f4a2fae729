import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    walk = data[1] if len(data) > 1 else b""
    parent = [0] * n
    parent[0] = -1
    stack = [0]
    nxt = 1
    for ch in walk:
        if ch == 68:  # 'D'
            parent[nxt] = stack[-1]
            stack.append(nxt)
            nxt += 1
        else:
            stack.pop()
    # vertices are numbered in preorder, so parent[v] < v
    sz = [1] * n
    d1 = [0] * n
    d2 = [0] * n
    for v in range(n - 1, 0, -1):
        p = parent[v]
        s, a, b = sz[v], d1[v], d2[v]
        sz[p] += s
        d1[p] += a + s
        d2[p] += b + 2 * a + s
    f1 = [0] * n
    f2 = [0] * n
    f1[0], f2[0] = d1[0], d2[0]
    for c in range(1, n):
        v = parent[c]
        s, a, b = sz[c], d1[c], d2[c]
        out1 = f1[v] - a - s          # sum of distances from v to vertices outside subtree(c)
        out2 = f2[v] - b - 2 * a - s  # the same for squared distances
        rest = n - s
        f1[c] = a + out1 + rest
        f2[c] = b + out2 + 2 * out1 + rest
    best = min(f2)
    print(best, f2.count(best))


main()
