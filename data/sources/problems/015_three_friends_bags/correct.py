import sys

data = sys.stdin.buffer.read().split()
cnt = [0, 0, 0]
for x in data[1:1 + int(data[0])]:
    cnt[int(x) % 3] += 1
print(cnt[0] * (cnt[0] - 1) // 2 + cnt[1] * cnt[2])
