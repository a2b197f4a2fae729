import sys

data = sys.stdin.buffer.read().split()
cnt = [0, 0, 0]
for x in data[1:1 + int(data[0])]:
    cnt[int(x) % 3] += 1
print(cnt[1] * cnt[2])  # forgets pairs of two bags that are both divisible by 3
