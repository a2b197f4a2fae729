import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
parent = list(range(n + 1))


def find(x):
    while parent[x] != x:  # no path compression and no union by size: chains grow long
        x = parent[x]
    return x


for i in range(m):
    a, b = find(int(data[2 + 2 * i])), find(int(data[3 + 2 * i]))
    if a != b:
        parent[a] = b
print(len({find(v) for v in range(1, n + 1)}) - 1)
