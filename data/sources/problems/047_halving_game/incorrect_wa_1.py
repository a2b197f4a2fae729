import sys


def grundy(x):
    y = x + 1
    while y % 2 == 0:
        y //= 2
    return y // 2


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    pos = 1
    out = []
    for _ in range(t):
        n = int(data[pos])
        a = [int(x) for x in data[pos + 1:pos + 1 + n]]
        pos += 1 + n
        gs = [grundy(x) for x in a]
        X = 0
        for v in gs:
            X ^= v
        # as in Nim: a heap can be fixed exactly when its value decreases
        out.append(str(sum(1 for v in gs if v ^ X < v)))
    print("\n".join(out))


main()
