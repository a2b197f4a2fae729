import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    out = []
    for i in range(t):
        A, B, C = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        cur = {(1, 1, 1): 1}
        for bit in range(58, -1, -1):  # 10^18 < 2^59 ... or is it?
            ba, bb, bc = A >> bit & 1, B >> bit & 1, C >> bit & 1
            nxt = {}
            for (ta, tb, tc), ways in cur.items():
                for x, y in ((0, 0), (1, 0), (0, 1)):
                    z = x | y
                    if ta and x > ba or tb and y > bb or tc and z > bc:
                        continue
                    key = (ta and x == ba, tb and y == bb, tc and z == bc)
                    nxt[key] = (nxt.get(key, 0) + ways) % MOD
            cur = nxt
        out.append(sum(cur.values()) % MOD)
    print("\n".join(map(str, out)))


main()
