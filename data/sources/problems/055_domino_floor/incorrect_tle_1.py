import sys

MOD = 10**9 + 7


def main():
    sys.setrecursionlimit(20000)
    data = sys.stdin.read().split()
    n, m = int(data[0]), int(data[1])
    g = [list(data[2 + i]) for i in range(n)]
    total = n * m

    def go(p):  # cover the first free square in every possible way
        while p < total and g[p // m][p % m] != ".":
            p += 1
        if p == total:
            return 1
        i, j = divmod(p, m)
        res = 0
        g[i][j] = "x"
        if j + 1 < m and g[i][j + 1] == ".":
            g[i][j + 1] = "x"
            res += go(p + 1)
            g[i][j + 1] = "."
        if i + 1 < n and g[i + 1][j] == ".":
            g[i + 1][j] = "x"
            res += go(p + 1)
            g[i + 1][j] = "."
        g[i][j] = "."
        return res

    print(go(0) % MOD)


main()
