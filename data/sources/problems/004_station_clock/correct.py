import sys

data = sys.stdin.read().split()
out = []
for i in range(int(data[0])):
    h, m = map(int, data[1 + 2 * i].split(":"))
    total = (h * 60 + m + int(data[2 + 2 * i])) % 1440
    out.append(f"{total // 60:02d}:{total % 60:02d}")
print("\n".join(out))
