import sys


def main():
    s = sys.stdin.buffer.read().split()[1]
    n = len(s)
    length = [-1, 0]
    link = [0, 0]
    occ = [0, 0]
    edges = {}
    last = 1
    for i in range(n):
        c = s[i]
        v = last
        while not (i - length[v] - 1 >= 0 and s[i - length[v] - 1] == c):
            v = link[v]
        u = edges.get(v * 256 + c)
        if u is None:
            u = len(length)
            length.append(length[v] + 2)
            occ.append(0)
            if length[u] == 1:
                link.append(1)
            else:
                w = link[v]
                while not (i - length[w] - 1 >= 0 and s[i - length[w] - 1] == c):
                    w = link[w]
                link.append(edges[w * 256 + c])
            edges[v * 256 + c] = u
        occ[u] += 1
        last = u
    # counts only the longest palindrome ending at each position
    print(sum(o * (o - 1) // 2 for o in occ[2:]))


main()
