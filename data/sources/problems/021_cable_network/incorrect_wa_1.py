import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
adj = [[] for _ in range(n + 1)]
for i in range(2, n + 1):
    p = int(data[i - 1])
    adj[i].append(p)
    adj[p].append(i)
dist = [-1] * (n + 1)
dist[1] = 0
order = [1]
for v in order:
    for u in adj[v]:
        if dist[u] < 0:
            dist[u] = dist[v] + 1
            order.append(u)
print(max(dist))  # only measures routes that start at house 1
