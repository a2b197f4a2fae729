import sys

data = sys.stdin.buffer.read().split()
n, cap = int(data[0]), int(data[1])
count = 0
for w in sorted(map(int, data[2:2 + n])):
    if w > cap:
        break
    cap -= w
    count += 1
print(count)
