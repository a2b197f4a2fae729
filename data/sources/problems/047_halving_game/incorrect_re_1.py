import sys


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    games = []
    pos = 1
    for _ in range(t):
        n = int(data[pos])
        games.append([int(x) for x in data[pos + 1:pos + 1 + n]])
        pos += 1 + n
    top = max(max(a) for a in games)
    # Grundy table by the recurrence g(2m) = m, g(2m + 1) = g(m)
    g = [0] * (top + 1)
    for x in range(2, top + 1):
        g[x] = x // 2 if x % 2 == 0 else g[x // 2]
    out = []
    for a in games:
        X = 0
        for x in a:
            X ^= g[x]
        cnt = 0
        if X:
            for x in a:
                want = g[x] ^ X
                cnt += sum(1 for y in range((x + 1) // 2, x) if g[y] == want)
        out.append(str(cnt))
    print("\n".join(out))


main()
