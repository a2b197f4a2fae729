import sys
from bisect import bisect_right


def subsets(items):
    res = [(0, 0)]
    for w, v in items:
        res += [(a + w, b + v) for a, b in res]
    return res


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    items = [(int(data[2 + 2 * i]), int(data[3 + 2 * i])) for i in range(n)]
    left = subsets(items[: n // 2])
    right = sorted(subsets(items[n // 2:]))
    rws = [w for w, _ in right]
    best = []
    cur = (-1, 0)
    for w, v in right:
        if v >= cur[0]:  # keeps the heaviest of the equally good subsets
            cur = (v, w)
        best.append(cur)
    ans = (-1, 0)
    for w, v in left:
        if w > cap:
            continue
        bv, bw = best[bisect_right(rws, cap - w) - 1]
        if v + bv > ans[0] or (v + bv == ans[0] and w + bw < ans[1]):
            ans = (v + bv, w + bw)
    print(ans[0], ans[1])


main()
