import sys
from functools import lru_cache

MOD = 10**9 + 7
data = sys.stdin.buffer.read().split()
n, k, m = int(data[0]), int(data[1]), int(data[2])
cracked = set(int(x) for x in data[3:3 + m])


@lru_cache(maxsize=None)
def ways(i):  # top-down memoisation: the recursion goes about n / k levels deep
    if i == 0:
        return 1
    if i in cracked:
        return 0
    return sum(ways(j) for j in range(max(0, i - k), i)) % MOD


print(ways(n))
