import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
t = list(map(int, data[1:1 + n]))
wait = [0] * n
stack = []
for i in range(n):
    while t[stack[-1]] < t[i]:  # forgets to check that the stack is not empty
        j = stack.pop()
        wait[j] = i - j
    stack.append(i)
print(" ".join(map(str, wait)))
