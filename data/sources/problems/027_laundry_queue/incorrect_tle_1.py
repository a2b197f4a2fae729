import sys
from itertools import permutations


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    bags = [(int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n)]
    best = None
    for order in permutations(bags):  # tries every order
        time = 0
        total = 0
        for t, w in order:
            time += t
            total += w * time
        if best is None or total < best:
            best = total
    print(best)


main()
