import sys
from math import gcd


def main():
    data = sys.stdin.buffer.read().split()
    k, T = int(data[0]), int(data[1])
    coins = sorted(set(int(x) for x in data[2:2 + k]))
    m = coins[0]
    INF = float("inf")
    # dist[r] = smallest payable amount congruent to r modulo m
    dist = [INF] * m
    dist[0] = 0
    for a in coins[1:]:
        g = gcd(a, m)
        step = a % m
        length = m // g
        for start in range(g):
            # find the cheapest residue on this cycle, then relax once around the cycle
            best, pos = INF, start
            cur = start
            for _ in range(length):
                if dist[cur] < best:
                    best, pos = dist[cur], cur
                cur += step
                if cur >= m:
                    cur -= m
            if best == INF:
                continue
            cur = pos
            val = best
            for _ in range(length - 1):
                nxt = cur + step
                if nxt >= m:
                    nxt -= m
                val += a
                d = dist[nxt]
                if d < val:
                    val = d
                else:
                    dist[nxt] = val
                cur = nxt
    total = 0
    for d in dist:
        if d <= T:
            total += (T - d) // m + 1
    print(total - 1)  # the amount 0 is not counted


main()
