import sys

MOD = 10**9 + 7


def mat_mul(X, Y):
    cols = list(zip(*Y))
    return [[sum(a * b for a, b in zip(row, col)) % MOD for col in cols] for row in X]


def trace_power(M, n):
    size = len(M)
    if size == 0:
        return 0
    R = None
    while n:
        if n & 1:
            R = M if R is None else mat_mul(R, M)
        n >>= 1
        if n:
            M = mat_mul(M, M)
    return sum(R[i][i] for i in range(size)) % MOD


def main():
    data = sys.stdin.buffer.read().split()
    n, m, s = int(data[0]), int(data[1]), int(data[2])
    sig = [int(x) - 1 for x in data[3:3 + s]]
    rows = [data[3 + s + i].decode() for i in range(m)]
    A = [[int(ch) for ch in row] for row in rows]
    ans = 0
    for mask in range(1 << s):
        removed = {sig[i] for i in range(s) if mask >> i & 1}
        keep = [i for i in range(m) if i not in removed]
        B = [[A[i][j] for j in keep] for i in keep]
        tr = trace_power(B, n)
        if bin(mask).count("1") & 1:
            ans -= tr
        else:
            ans += tr
    print(ans % MOD)


main()
