import sys
from itertools import accumulate

LIM = 10**6
sieve = bytearray([1]) * (LIM + 1)
sieve[0] = sieve[1] = 0
for p in range(2, int(LIM**0.5) + 1):
    if sieve[p]:
        sieve[p * p::p] = bytes(len(range(p * p, LIM + 1, p)))
count = list(accumulate(sieve))  # count[x] = number of primes <= x
data = list(map(int, sys.stdin.buffer.read().split()))
out = [count[data[2 * j + 2]] - count[data[2 * j + 1] - 1] for j in range(data[0])]
print("\n".join(map(str, out)))
