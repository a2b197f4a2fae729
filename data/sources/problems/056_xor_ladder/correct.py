import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    basis = [0] * 60
    for tok in data[2:2 + n]:
        x = int(tok)
        for b in range(59, -1, -1):
            if not x >> b & 1:
                continue
            if basis[b]:
                x ^= basis[b]
            else:
                basis[b] = x
                break
    # reduced row echelon form: each leading bit appears in exactly one vector
    for b in range(60):
        if basis[b]:
            for c in range(b + 1, 60):
                if basis[c] >> b & 1:
                    basis[c] ^= basis[b]
    vecs = [basis[b] for b in range(60) if basis[b]]  # increasing leading bit
    r = len(vecs)
    shift = n - r  # every reachable value is produced by exactly 2^shift subsets
    out = []
    for tok in data[2 + n:2 + n + q]:
        k = int(tok) - 1
        idx = k >> shift if shift < 64 else 0
        val = 0
        i = 0
        while idx:
            if idx & 1:
                val ^= vecs[i]
            idx >>= 1
            i += 1
        out.append(val)
    print("\n".join(map(str, out)))


main()
