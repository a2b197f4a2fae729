import sys

MOD = 10**9 + 7
data = list(map(int, sys.stdin.buffer.read().split()))
q = data[0]
top = max(data[1:1 + 4 * q:4]) + max(data[2:2 + 4 * q:4]) + 1
fact = [1] * (top + 1)
for i in range(1, top + 1):
    fact[i] = fact[i - 1] * i % MOD
inv = [1] * (top + 1)
inv[top] = pow(fact[top], MOD - 2, MOD)
for i in range(top, 0, -1):
    inv[i - 1] = inv[i] * i % MOD


def paths(dx, dy):
    if dx < 0 or dy < 0:
        return 0
    return fact[dx + dy] * inv[dx] % MOD * inv[dy] % MOD


out = []
for i in range(q):
    a, b, x, y = data[1 + 4 * i: 5 + 4 * i]
    out.append((paths(a, b) - paths(x, y) * paths(a - x, b - y)) % MOD)
print("\n".join(map(str, out)))
