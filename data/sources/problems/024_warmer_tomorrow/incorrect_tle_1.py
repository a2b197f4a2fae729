import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
t = list(map(int, data[1:1 + n]))
wait = [0] * n
for i in range(n):
    for j in range(i + 1, n):  # scans forward from every day
        if t[j] > t[i]:
            wait[i] = j - i
            break
print(" ".join(map(str, wait)))
