import sys


def main():
    data = sys.stdin.read().split()
    n, k = int(data[0]), int(data[1])
    a = [int(x) for x in data[2:2 + k]]
    res = [0] * (k + 1)
    for x in range(1, n + 1):  # walks through every marcher
        c = 0
        for v in a:
            if x % v == 0:
                c += 1
        res[c] += 1
    print(" ".join(map(str, res)))


main()
