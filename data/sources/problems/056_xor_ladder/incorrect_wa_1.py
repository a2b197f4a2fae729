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
    vecs = [basis[b] for b in range(60) if basis[b]]  # echelon form, but not reduced
    shift = n - len(vecs)
    out = []
    for tok in data[2 + n:2 + n + q]:
        idx = (int(tok) - 1) >> shift
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
