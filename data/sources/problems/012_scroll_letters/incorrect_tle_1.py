import sys

data = sys.stdin.buffer.read().split()
n, q = int(data[0]), int(data[1])
s = data[2].decode()
out = []
for j in range(q):
    l, r, c = int(data[3 + 3 * j]), int(data[4 + 3 * j]), data[5 + 3 * j].decode()
    count = 0
    for i in range(l - 1, r):
        if s[i] == c:
            count += 1
    out.append(count)
print("\n".join(map(str, out)))
