import sys

data = sys.stdin.read().split()
out = []
for i in range(int(data[0])):
    h, m = map(int, data[1 + 2 * i].split(":"))
    k = int(data[2 + 2 * i])
    for _ in range(k):  # tick the clock minute by minute
        m += 1
        if m == 60:
            m = 0
            h = (h + 1) % 24
    out.append(f"{h:02d}:{m:02d}")
print("\n".join(out))
