import sys


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    pos = 1
    out = []
    for _ in range(t):
        n = int(data[pos])
        a = [int(x) for x in data[pos + 1:pos + 1 + n]]
        pos += 1 + n
        # Grundy value: write x + 1 = (2g + 1) * 2^j, then g(x) = g
        gs = []
        X = 0
        for x in a:
            y = x + 1
            y >>= (y & -y).bit_length() - 1
            v = y >> 1
            gs.append(v)
            X ^= v
        if X == 0:
            out.append("0")
            continue
        cnt = 0
        for x, v in zip(a, gs):
            odd = 2 * (v ^ X) + 1
            lo = (x + 1) // 2 + 1  # y + 1 ranges over [ceil(x/2) + 1, x]
            hi = x
            if odd > hi:
                continue
            # smallest odd * 2^j >= lo
            q = (lo + odd - 1) // odd
            p = 1 << (q - 1).bit_length()
            if odd * p <= hi:
                cnt += 1
        out.append(str(cnt))
    print("\n".join(out))


main()
