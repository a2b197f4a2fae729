import sys
from functools import cmp_to_key


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    bags = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n)]
    # exchange argument: a goes before b when t_a * w_b < t_b * w_a
    bags.sort(key=cmp_to_key(lambda a, b: a[0] * b[1] - b[0] * a[1]))
    time = 0
    total = 0
    for t, w in bags:
        time += t
        total += w * time
    print(total)


main()
