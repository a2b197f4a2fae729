import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    parent = list(range(n + 2))
    size = [1] * (n + 2)
    # nxt[i]: smallest j >= i such that villages j and j + 1 were not yet joined by a range decree
    nxt = list(range(n + 2))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        a, b = find(a), find(b)
        if a != b:
            if size[a] < size[b]:
                a, b = b, a
            parent[b] = a
            size[a] += size[b]

    def next_free(i):
        root = i
        while nxt[root] != root:
            root = nxt[root]
        while nxt[i] != root:
            nxt[i], i = root, nxt[i]
        return root

    out = []
    pos = 2
    for _ in range(q):
        kind = data[pos]
        if kind == b"3":
            out.append(size[find(int(data[pos + 1]))])
            pos += 2
            continue
        a, b = int(data[pos + 1]), int(data[pos + 2])
        pos += 3
        if kind == b"1":
            union(a, b)
        else:
            i = next_free(a)
            while i < b:
                union(i, i + 1)
                nxt[i] = i + 1
                i = next_free(i + 1)
    print("\n".join(map(str, out)))


main()
