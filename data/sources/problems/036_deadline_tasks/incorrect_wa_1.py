import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tasks = sorted(zip(map(int, data[2:2 + 2 * n:2]), map(int, data[1:1 + 2 * n:2])))  # (deadline, time)
    total = 0
    done = 0
    for d, t in tasks:  # earliest deadline first, take whatever still fits
        if total + t <= d:
            total += t
            done += 1
    print(done)


main()
