import sys


def ones_upto(n):
    """Number of one bits over all integers 0..n."""
    if n < 0:
        return 0
    total = 0
    m = n + 1
    b = 0
    while (1 << b) <= n:
        block = 1 << (b + 1)
        half = 1 << b
        total += (m // block) * half + max(0, m % block - half)
        b += 1
    return total


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    for i in range(t):
        l, r = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        out.append(ones_upto(r) - ones_upto(l - 1))
    print("\n".join(map(str, out)))


main()
