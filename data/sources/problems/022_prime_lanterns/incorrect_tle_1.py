import sys


def is_prime(x):
    if x < 2:
        return False
    d = 2
    while d * d <= x:
        if x % d == 0:
            return False
        d += 1
    return True


data = list(map(int, sys.stdin.buffer.read().split()))
out = []
for j in range(data[0]):
    l, r = data[2 * j + 1], data[2 * j + 2]
    out.append(sum(1 for x in range(l, r + 1) if is_prime(x)))
print("\n".join(map(str, out)))
