import sys


def main():
    n = int(sys.stdin.read().split()[0])
    out = []
    for k in range(1, n + 1):
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        cnt = 0
        for mask in range(1 << len(pairs)):  # every possible road network
            adj = [[] for _ in range(k)]
            for e, (i, j) in enumerate(pairs):
                if mask >> e & 1:
                    adj[i].append(j)
                    adj[j].append(i)
            color = [-1] * k
            color[0] = 0
            stack = [0]
            ok = True
            seen = 1
            while stack and ok:
                v = stack.pop()
                for u in adj[v]:
                    if color[u] < 0:
                        color[u] = 1 - color[v]
                        seen += 1
                        stack.append(u)
                    elif color[u] == color[v]:
                        ok = False
                        break
            if ok and seen == k:
                cnt += 1
        out.append(cnt % 998244353)
    print("\n".join(map(str, out)))


main()
