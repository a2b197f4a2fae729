import sys


def main():
    data = sys.stdin.buffer.read().split()
    t = data[0].decode()
    s = data[1].decode()
    m, n = len(t), len(s)
    w = t + "#" + s
    L = len(w)
    z = [0] * L
    z[0] = L
    l = r = 0
    for i in range(1, L):
        if i < r:
            k = z[i - l]
            if k < r - i:
                z[i] = k
                continue
            k = r - i
        else:
            k = 0
        while i + k < L and w[k] == w[i + k]:
            k += 1
        z[i] = k
        l, r = i, i + k
    reach = z[m + 1:]  # reach[i] = longest prefix of t starting at s[i]
    MOD = 998244353
    # minimum pieces: positions reachable with <= k pieces form a prefix [0, R_k]
    pieces = 0
    cur = 0  # R_k
    i = 0
    while cur < n:
        best = cur
        while i <= cur:
            v = i + reach[i]
            if v > best:
                best = v
            i += 1
        if best == cur:
            print("-1 0")
            return
        cur = best
        pieces += 1
    # number of ways: difference array over target positions
    diff = [0] * (n + 2)
    run = 0
    for i in range(n):
        run = (run + diff[i]) % MOD
        ways = 1 if i == 0 else run
        if ways and reach[i]:
            diff[i + 1] += ways
            diff[i + reach[i] + 1] -= ways
    run = (run + diff[n]) % MOD
    print(pieces, run % MOD)


main()
