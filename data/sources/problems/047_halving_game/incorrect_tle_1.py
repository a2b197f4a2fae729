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
        cnt = 0
        if X:
            for x, v in zip(a, gs):
                want = v ^ X
                k = 1
                while k <= x // 2:  # tries every possible number of pebbles
                    if grundy(x - k) == want:
                        cnt += 1
                    k += 1
        out.append(str(cnt))
    print("\n".join(out))


main()
