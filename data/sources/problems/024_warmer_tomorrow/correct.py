import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
t = list(map(int, data[1:1 + n]))
wait = [0] * n
stack = []  # days still waiting for a warmer dawn; their temperatures never increase
for i in range(n):
    while stack and t[stack[-1]] < t[i]:
        j = stack.pop()
        wait[j] = i - j
    stack.append(i)
print(" ".join(map(str, wait)))
