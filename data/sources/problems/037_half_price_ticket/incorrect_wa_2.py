import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    adj = [[] for _ in range(n + 1)]
    for j in range(m):
        u, v, w = int(data[2 + 3 * j]), int(data[3 + 3 * j]), int(data[4 + 3 * j])
        adj[u].append((v, w))
        adj[v].append((u, w))
    INF = float("inf")
    dist = [INF] * (n + 1)
    par = [(0, 0)] * (n + 1)
    dist[1] = 0
    heap = [(0, 1)]
    while heap:
        d, v = heapq.heappop(heap)
        if d > dist[v]:
            continue
        for u, w in adj[v]:
            if d + w < dist[u]:
                dist[u] = d + w
                par[u] = (v, w)
                heapq.heappush(heap, (d + w, u))
    if dist[n] == INF:
        print(-1)
        return
    # take the cheapest route and use the voucher on its most expensive ticket
    biggest = 0
    v = n
    while v != 1:
        v, w = par[v]
        biggest = max(biggest, w)
    print(dist[n] - biggest + biggest // 2)


main()
