import sys

MOD = 10**9 + 7


def mat_mul(X, Y):
    k = len(X[0])
    return [[sum(X[i][l] * Y[l][j] for l in range(k)) % MOD for j in range(len(Y[0]))] for i in range(len(X))]


def trace_power(M, n):
    k = len(M[0])
    R = [[int(i == j) for j in range(k)] for i in range(k)]
    while n:
        if n & 1:
            R = mat_mul(R, M)
        M = mat_mul(M, M)
        n >>= 1
    return sum(R[i][i] for i in range(k)) % MOD


def main():
    data = sys.stdin.read().split()
    n, m, s = int(data[0]), int(data[1]), int(data[2])
    sig = [int(x) - 1 for x in data[3:3 + s]]
    A = [[int(c) for c in row] for row in data[3 + s:3 + s + m]]
    ans = 0
    for mask in range(1 << s):
        removed = {sig[i] for i in range(s) if mask >> i & 1}
        keep = [i for i in range(m) if i not in removed]
        B = [[A[i][j] for j in keep] for i in keep]
        sign = -1 if bin(mask).count("1") % 2 else 1
        ans += sign * trace_power(B, n)
    print(ans % MOD)


main()
