import sys
from bisect import bisect_right

data = sys.stdin.buffer.read().split()
n, q = int(data[0]), int(data[1])
prices = sorted(map(int, data[2:2 + n]))
print(" ".join(str(bisect_right(prices, int(b))) for b in data[2 + n:2 + n + q]))
