import sys

POW = [1 << b for b in range(57)]  # 2^56 < 10^17, so 57 powers "are enough"


def ones_upto(n):
    if n < 0:
        return 0
    total = 0
    m = n + 1
    for b in range(n.bit_length()):
        block, half = POW[b + 1], POW[b]
        total += (m // block) * half + max(0, m % block - half)
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
