import sys

MOD = 10**9 + 7


def line_count(length, k):
    """Ways to pick k pairwise non-adjacent chairs in a row of `length` chairs (O(length * k) dp)."""
    if k < 0 or length < 0:
        return 1 if k == 0 and length >= -1 else 0
    # free[j]: ways so far with j chosen and the last chair empty; used[j]: last chair chosen
    free = [0] * (k + 1)
    used = [0] * (k + 1)
    free[0] = 1
    for _ in range(length):
        nfree = [(free[j] + used[j]) % MOD for j in range(k + 1)]
        nused = [0] + free[:k]
        free, used = nfree, nused
    return (free[k] + used[k]) % MOD


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    out = []
    for i in range(q):
        n, k = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        if k == 0:
            out.append(1)
            continue
        out.append((line_count(n - 1, k) + line_count(n - 3, k - 1)) % MOD)
    print("\n".join(map(str, out)))


main()
