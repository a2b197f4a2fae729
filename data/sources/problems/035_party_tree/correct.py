import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, c = int(data[0]), int(data[1])
    a = [0] + [int(x) for x in data[2:2 + n]]
    boss = [0, 0] + [int(x) for x in data[2 + n:1 + 2 * n]]
    children = [[] for _ in range(n + 1)]
    for i in range(2, n + 1):
        children[boss[i]].append(i)
    order = [1]
    for v in order:  # BFS order: every boss comes before its subordinates
        order.extend(children[v])
    out_ = [0] * (n + 1)  # best in the subtree when v is not invited
    in_ = [0] * (n + 1)   # best in the subtree when v is invited
    for v in reversed(order):
        skip = 0
        take = a[v]
        for u in children[v]:
            ou, iu = out_[u], in_[u]
            skip += ou if ou > iu else iu
            take += ou if ou > iu - c else iu - c
        out_[v] = skip
        in_[v] = take
    print(max(out_[1], in_[1]))


main()
