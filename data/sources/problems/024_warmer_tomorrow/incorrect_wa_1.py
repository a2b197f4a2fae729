import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
t = list(map(int, data[1:1 + n]))
wait = [0] * n
stack = []
for i in range(n):
    while stack and t[stack[-1]] <= t[i]:  # an equally warm dawn is not warmer
        j = stack.pop()
        wait[j] = i - j
    stack.append(i)
print(" ".join(map(str, wait)))
