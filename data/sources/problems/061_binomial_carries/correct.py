import sys


def solve(n, p, e):
    digits = []
    while n:
        n, d = divmod(n, p)
        digits.append(d)
    if e >= len(digits):
        return 0
    # Kummer: v_p(C(n, k)) = number of carries when adding k and n - k in base p.
    # a0[j] / a1[j]: digit prefixes of k with j carries so far and carry 0 / 1 into the next digit
    a0 = [0] * (e + 1)
    a1 = [0] * (e + 1)
    a0[0] = 1
    for d in digits:
        s00 = d + 1          # carry 0 -> carry 0
        s10 = d              # carry 1 -> carry 0
        s01 = p - 1 - d      # carry 0 -> carry 1
        s11 = p - d          # carry 1 -> carry 1
        n0 = [s00 * x + s10 * y for x, y in zip(a0, a1)]
        n1 = [0] + [s01 * x + s11 * y for x, y in zip(a0[:e], a1[:e])]
        a0, a1 = n0, n1
    return a0[e]


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    for i in range(t):
        n, p, e = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        out.append(solve(n, p, e))
    print("\n".join(map(str, out)))


main()
