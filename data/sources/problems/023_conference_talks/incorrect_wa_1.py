import sys

data = list(map(int, sys.stdin.buffer.read().split()))
n = data[0]
talks = sorted(zip(data[1:1 + 2 * n:2], data[2:2 + 2 * n:2]))  # earliest start first
free_from = count = 0
for s, e in talks:
    if s >= free_from:
        count += 1
        free_from = e
print(count)
