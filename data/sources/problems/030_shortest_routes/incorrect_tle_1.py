import sys
from collections import deque

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    adj = [[] for _ in range(n + 1)]
    for i in range(m):
        u, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        adj[u].append(v)
        adj[v].append(u)
    dist = [-1] * (n + 1)
    dist[1] = 0
    q = deque([1])
    while q:
        u = q.popleft()
        for v in adj[u]:
            if dist[v] == -1:
                dist[v] = dist[u] + 1
                q.append(v)
    if dist[n] == -1:
        print(-1)
        return
    # walk every shortest route explicitly
    routes = 0
    stack = [1]
    while stack:
        u = stack.pop()
        if u == n:
            routes += 1
            continue
        for v in adj[u]:
            if dist[v] == dist[u] + 1:
                stack.append(v)
    print(dist[n], routes % MOD)


main()
