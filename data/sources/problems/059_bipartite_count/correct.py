import sys

MOD = 998244353


def main():
    n = int(sys.stdin.buffer.read().split()[0])
    fact = [1] * (n + 1)
    for i in range(1, n + 1):
        fact[i] = fact[i - 1] * i % MOD
    ifact = [1] * (n + 1)
    ifact[n] = pow(fact[n], MOD - 2, MOD)
    for i in range(n, 0, -1):
        ifact[i - 1] = ifact[i] * i % MOD
    top = n * n // 4
    p2 = [1] * (top + 1)
    for i in range(1, top + 1):
        p2[i] = p2[i - 1] * 2 % MOD
    # b[k]: graphs on k labelled vertices together with a proper 2-colouring (left/right)
    # b[k] = sum_j C(k, j) 2^(j (k - j));  store b[k] / k!  to simplify the convolution below
    bt = [0] * (n + 1)
    for k in range(n + 1):
        s = 0
        for j in range(k + 1):
            s += ifact[j] * ifact[k - j] % MOD * p2[j * (k - j)]
        bt[k] = s % MOD
    b = [bt[k] * fact[k] % MOD for k in range(n + 1)]
    # c[k]: connected 2-coloured graphs; the component of vertex 1 has j vertices:
    # b[k] = sum_j C(k-1, j-1) c[j] b[k-j]
    c = [0] * (n + 1)
    ct = [0] * (n + 1)  # c[j] / (j - 1)!
    inv2 = (MOD + 1) // 2
    out = []
    for k in range(1, n + 1):
        s = 0
        for j in range(1, k):
            s += ct[j] * bt[k - j]
        # C(k-1, j-1) c[j] b[k-j] = (k-1)! * c[j]/(j-1)! * b[k-j]/(k-j)!
        cur = (b[k] - s % MOD * fact[k - 1]) % MOD
        c[k] = cur
        ct[k] = cur * ifact[k - 1] % MOD
        out.append(cur * inv2 % MOD)
    print("\n".join(map(str, out)))


main()
