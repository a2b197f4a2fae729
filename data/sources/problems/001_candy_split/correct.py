import sys

data = sys.stdin.read().split()
t = int(data[0])
print("\n".join("YES" if int(x) % 2 == 0 and int(x) > 2 else "NO" for x in data[1:1 + t]))
