import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    pairs = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n)]
    total = 1
    for _, m in pairs:
        total *= m
    # textbook Chinese remainder theorem
    x = 0
    for r, m in pairs:
        part = total // m
        x += r * part * pow(part, -1, m)
    print(x % total)


main()
