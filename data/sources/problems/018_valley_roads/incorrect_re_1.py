import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
adj = [[] for _ in range(n + 1)]
for i in range(m):
    u, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
    adj[u].append(v)
    adj[v].append(u)
seen = [False] * (n + 1)


def dfs(v):  # recursion depth equals the length of the longest path walked
    seen[v] = True
    for u in adj[v]:
        if not seen[u]:
            dfs(u)


components = 0
for v in range(1, n + 1):
    if not seen[v]:
        components += 1
        dfs(v)
print(components - 1)
