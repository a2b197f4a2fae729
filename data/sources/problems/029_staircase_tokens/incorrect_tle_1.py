import sys

MOD = 10**9 + 7


def prefix(x):
    total = 0
    v = 1
    while x > 0:  # walks value by value: about sqrt(2x) steps
        take = min(v, x)
        total += take * v
        x -= take
        v += 1
    return total


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    out = []
    for i in range(q):
        l, r = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        out.append((prefix(r) - prefix(l - 1)) % MOD)
    print("\n".join(map(str, out)))


main()
