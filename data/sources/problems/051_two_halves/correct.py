import sys

SH = 46
MASK = (1 << SH) - 1


def subsets(items):
    # each subset encoded as weight << SH | value (values stay below 2^46)
    cur = [0]
    for w, v in items:
        add = w << SH | v
        cur = cur + [x + add for x in cur]
    return cur


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    items = [(int(data[2 + 2 * i]), int(data[3 + 2 * i])) for i in range(n)]
    left = subsets(items[: n // 2])
    right = subsets(items[n // 2:])
    right.sort()
    left.sort()
    # prefix best over right subsets sorted by weight: max value, then min weight
    rws = []
    best = []
    best_v = -1
    best_code = 0
    for code in right:
        v = code & MASK
        if v > best_v:
            best_v, best_code = v, code
        rws.append(code >> SH)
        best.append(best_code)
    ans_v, ans_w = -1, 0
    ptr = len(rws) - 1
    for code in left:
        w = code >> SH
        room = cap - w
        if room < 0:
            break
        while rws[ptr] > room:
            ptr -= 1
        tot = code + best[ptr]
        tv = tot & MASK
        if tv > ans_v or (tv == ans_v and (tot >> SH) < ans_w):
            ans_v, ans_w = tv, tot >> SH
    print(ans_v, ans_w)


main()
