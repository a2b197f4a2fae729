import sys


def kth(a, k):
    basis = [0] * 60
    for x in a:
        for b in range(59, -1, -1):
            if x >> b & 1:
                if basis[b]:
                    x ^= basis[b]
                else:
                    basis[b] = x
                    break
    for b in range(60):
        if basis[b]:
            for c in range(b + 1, 60):
                if basis[c] >> b & 1:
                    basis[c] ^= basis[b]
    vecs = [basis[b] for b in range(60) if basis[b]]
    idx = (k - 1) >> (len(a) - len(vecs))
    val = 0
    for i, v in enumerate(vecs):
        if idx >> i & 1:
            val ^= v
    return val


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    a = [int(x) for x in data[2:2 + n]]
    # the basis is rebuilt for every question
    print("\n".join(str(kth(a, int(k))) for k in data[2 + n:2 + n + q]))


main()
