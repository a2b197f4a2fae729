import sys

data = list(map(int, sys.stdin.buffer.read().split()))
n = data[0]
talks = sorted(zip(data[2:2 + 2 * n:2], data[1:1 + 2 * n:2]))
best = [0] * (n + 1)  # best[i]: answer using the first i talks by end time
for i in range(1, n + 1):
    e, s = talks[i - 1]
    take = 0
    for j in range(i - 1, 0, -1):  # look for the last talk that ends before this one starts
        if talks[j - 1][0] <= s:
            take = best[j]
            break
    best[i] = max(best[i - 1], take + 1)
print(best[n])
