import sys


def solve(n, p, e):
    digits = []
    while n:
        n, d = divmod(n, p)
        digits.append(d)
    L = len(digits)
    a0 = [0] * L  # at most L - 1 carries are possible
    a1 = [0] * L
    a0[0] = 1
    for d in digits:
        n0 = [(d + 1) * x + d * y for x, y in zip(a0, a1)]
        n1 = [0] + [(p - 1 - d) * x + (p - d) * y for x, y in zip(a0[:-1], a1[:-1])]
        a0, a1 = n0, n1
    return a0[e]


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    print("\n".join(str(solve(int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i]))) for i in range(t)))


main()
