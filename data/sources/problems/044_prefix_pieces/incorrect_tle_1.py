import sys


def main():
    t, s = sys.stdin.read().split()
    m, n = len(t), len(s)
    MOD = 998244353
    reach = [0] * n
    for i in range(n):  # direct comparison: O(|s| * |t|) on repetitive strings
        k = 0
        while k < m and i + k < n and s[i + k] == t[k]:
            k += 1
        reach[i] = k
    INF = float("inf")
    best = [INF] * (n + 1)
    ways = [0] * (n + 1)
    best[0], ways[0] = 0, 1
    for i in range(n):
        if ways[i] == 0 and best[i] == INF:
            continue
        for j in range(i + 1, i + reach[i] + 1):
            if best[i] + 1 < best[j]:
                best[j] = best[i] + 1
            ways[j] = (ways[j] + ways[i]) % MOD
    if best[n] == INF:
        print("-1 0")
    else:
        print(best[n], ways[n])


main()
