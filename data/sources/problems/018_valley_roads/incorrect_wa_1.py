import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
# assumes every road joins two different groups of villages
print(max(0, n - 1 - m))
