import sys


def main():
    s = sys.stdin.buffer.read().split()[1]
    n = len(s)
    # palindromic tree: node 0 has length -1 (imaginary root), node 1 has length 0
    length = [-1, 0]
    link = [0, 0]
    occ = [0, 0]
    edges = {}
    last = 1
    for i in range(n):
        c = s[i]
        v = last
        while True:
            L = length[v]
            j = i - L - 1
            if j >= 0 and s[j] == c:
                break
            v = link[v]
        key = v * 256 + c
        u = edges.get(key)
        if u is None:
            u = len(length)
            L = length[v] + 2
            length.append(L)
            occ.append(0)
            if L == 1:
                link.append(1)
            else:
                w = link[v]
                while True:
                    j = i - length[w] - 1
                    if j >= 0 and s[j] == c:
                        break
                    w = link[w]
                link.append(edges[w * 256 + c])
            edges[key] = u
        occ[u] += 1
        last = u
    # a suffix link always points to a node created earlier, so a reverse sweep over creation
    # order pushes the end-position counts down the links correctly
    total = 0
    for v in range(len(length) - 1, 1, -1):
        o = occ[v]
        total += o * (o - 1) // 2
        occ[link[v]] += o
    print(total)


main()
