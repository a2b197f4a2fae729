import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tasks = sorted(zip(map(int, data[2:2 + 2 * n:2]), map(int, data[1:1 + 2 * n:2])))  # (deadline, time)
    heap = []  # max-heap of chosen working times (stored negated)
    total = 0
    for d, t in tasks:
        heapq.heappush(heap, -t)
        total += t
        if total > d:  # drop the longest chosen assignment
            total += heapq.heappop(heap)
    print(len(heap))


main()
