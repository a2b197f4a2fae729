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
    # state 2*v + used: used = 1 once the voucher has been spent
    dist = [INF] * (2 * n + 2)
    dist[2] = 0
    heap = [(0, 2)]
    while heap:
        d, s = heapq.heappop(heap)
        if d > dist[s]:
            continue
        v, used = s >> 1, s & 1
        for u, w in adj[v]:
            t = 2 * u + used
            nd = d + w
            if nd < dist[t]:
                dist[t] = nd
                heapq.heappush(heap, (nd, t))
            if not used:
                nd = d + w // 2
                if nd < dist[t + 1]:
                    dist[t + 1] = nd
                    heapq.heappush(heap, (nd, t + 1))
    best = min(dist[2 * n], dist[2 * n + 1])
    print(-1 if best == INF else best)


main()
