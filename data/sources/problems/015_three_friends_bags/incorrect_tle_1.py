import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
a = list(map(int, data[1:1 + n]))
count = 0
for i in range(n):
    for j in range(i + 1, n):
        if (a[i] + a[j]) % 3 == 0:
            count += 1
print(count)
