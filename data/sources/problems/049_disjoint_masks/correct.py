import sys

MOD = 10**9 + 7
BITS = 60


def build_transitions():
    # state = ta | tb << 1 | tc << 2 (1 = still equal to the bound's prefix)
    trans = []
    for combo in range(8):
        ba, bb, bc = combo & 1, combo >> 1 & 1, combo >> 2 & 1
        pairs = []
        for st in range(8):
            ta, tb, tc = st & 1, st >> 1 & 1, st >> 2 & 1
            for x, y in ((0, 0), (1, 0), (0, 1)):
                z = x | y
                if ta and x > ba or tb and y > bb or tc and z > bc:
                    continue
                nt = (ta and x == ba) | (tb and y == bb) << 1 | (tc and z == bc) << 2
                pairs.append((st, nt))
        trans.append(pairs)
    return trans


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    trans = build_transitions()
    out = []
    for i in range(t):
        A, B, C = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        cur = [0] * 8
        cur[7] = 1
        for bit in range(BITS - 1, -1, -1):
            combo = (A >> bit & 1) | (B >> bit & 1) << 1 | (C >> bit & 1) << 2
            nxt = [0] * 8
            for st, nt in trans[combo]:
                nxt[nt] += cur[st]
            cur = [v % MOD for v in nxt]
        out.append(sum(cur) % MOD)
    print("\n".join(map(str, out)))


main()
