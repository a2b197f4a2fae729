import sys
from bisect import bisect_left, bisect_right

data = sys.stdin.buffer.read().split()
n, q = int(data[0]), int(data[1])
s = data[2].decode()
where = {}
for i, ch in enumerate(s, 1):
    where.setdefault(ch, []).append(i)
out = []
for j in range(q):
    l, r, c = int(data[3 + 3 * j]), int(data[4 + 3 * j]), data[5 + 3 * j].decode()
    pos = where.get(c, [])
    out.append(bisect_right(pos, r) - bisect_left(pos, l))
print("\n".join(map(str, out)))
