import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, c = int(data[0]), int(data[1])
    a = [0] + [int(x) for x in data[2:2 + n]]
    children = [[] for _ in range(n + 1)]
    for i in range(2, n + 1):
        children[int(data[i + n])].append(i)

    def solve(v):
        skip, take = 0, a[v]
        for u in children[v]:
            ou, iu = solve(u)
            skip += max(ou, iu)
            take += max(ou, iu - c)
        return skip, take

    print(max(solve(1)))


main()
