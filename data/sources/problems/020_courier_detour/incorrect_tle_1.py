import sys
from math import comb

MOD = 10**9 + 7
data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for i in range(data[0]):
    a, b, x, y = data[1 + 4 * i: 5 + 4 * i]
    # exact binomial coefficients are huge numbers: every query costs a lot of big-integer work
    total = comb(a + b, a)
    blocked = comb(x + y, x) * comb(a - x + b - y, a - x) if x <= a and y <= b else 0
    out.append((total - blocked) % MOD)
print("\n".join(map(str, out)))
