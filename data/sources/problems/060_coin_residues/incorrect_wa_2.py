import sys
import heapq


def main():
    data = sys.stdin.buffer.read().split()
    k, T = int(data[0]), int(data[1])
    coins = sorted(set(int(x) for x in data[2:2 + k]))
    m = coins[0]
    dist = [None] * m
    dist[0] = 0
    pq = [(0, 0)]
    while pq:
        d, r = heapq.heappop(pq)
        if d > dist[r]:
            continue
        for a in coins[1:]:
            nr = (r + a) % m
            if dist[nr] is None or d + a < dist[nr]:
                dist[nr] = d + a
                heapq.heappush(pq, (d + a, nr))
    # counts every reachable residue class from its smallest amount up to T, including 0
    print(sum((T - d) // m + 1 for d in dist if d is not None and d <= T))


main()
