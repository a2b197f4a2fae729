import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tasks = sorted(zip(map(int, data[2:2 + 2 * n:2]), map(int, data[1:1 + 2 * n:2])))  # (deadline, time)
    best = 0
    for mask in range(1 << n):  # every subset, checked in deadline order
        total = 0
        ok = True
        cnt = 0
        for i in range(n):
            if mask >> i & 1:
                d, t = tasks[i]
                total += t
                cnt += 1
                if total > d:
                    ok = False
                    break
        if ok and cnt > best:
            best = cnt
    print(best)


main()
