import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    bags = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n)]
    bags.sort(key=lambda b: (b[0], -b[1]))  # shortest job first, heavier customer on ties
    time = 0
    total = 0
    for t, w in bags:
        time += t
        total += w * time
    print(total)


main()
