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
    memo = {}

    def count(v):  # routes from 1 to v, recursing towards vertex 1
        if v == 1:
            return 1
        if v not in memo:
            memo[v] = sum(count(u) for u in adj[v] if dist[u] == dist[v] - 1) % MOD
        return memo[v]

    print(dist[n], count(n))


main()
