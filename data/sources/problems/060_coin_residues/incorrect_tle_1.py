import sys


def main():
    data = sys.stdin.buffer.read().split()
    k, T = int(data[0]), int(data[1])
    coins = sorted(set(int(x) for x in data[2:2 + k]))
    m = coins[0]
    INF = float("inf")
    dist = [INF] * m
    dist[0] = 0
    done = [False] * m
    for _ in range(m):  # Dijkstra without a heap: scan for the closest residue every time
        best, r = INF, -1
        for i in range(m):
            if not done[i] and dist[i] < best:
                best, r = dist[i], i
        if r < 0:
            break
        done[r] = True
        for a in coins[1:]:
            nr = (r + a) % m
            if best + a < dist[nr]:
                dist[nr] = best + a
    print(sum((T - d) // m + 1 for d in dist if d <= T) - 1)


main()
