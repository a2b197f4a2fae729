import sys


def main():
    data = sys.stdin.read().split()
    n = int(data[0])
    walk = data[1] if len(data) > 1 else ""
    children = [[] for _ in range(n)]
    stack = [0]
    nxt = 1
    for ch in walk:
        if ch == "D":
            children[stack[-1]].append(nxt)
            stack.append(nxt)
            nxt += 1
        else:
            stack.pop()
    sz = [1] * n
    d1 = [0] * n
    d2 = [0] * n

    def down(v):
        for c in children[v]:
            down(c)
            sz[v] += sz[c]
            d1[v] += d1[c] + sz[c]
            d2[v] += d2[c] + 2 * d1[c] + sz[c]

    f1 = [0] * n
    f2 = [0] * n

    def up(v):
        for c in children[v]:
            out1 = f1[v] - d1[c] - sz[c]
            out2 = f2[v] - d2[c] - 2 * d1[c] - sz[c]
            rest = n - sz[c]
            f1[c] = d1[c] + out1 + rest
            f2[c] = d2[c] + out2 + 2 * out1 + rest
            up(c)

    down(0)
    f1[0], f2[0] = d1[0], d2[0]
    up(0)
    best = min(f2)
    print(best, f2.count(best))


main()
