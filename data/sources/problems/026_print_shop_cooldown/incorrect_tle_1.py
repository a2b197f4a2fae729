import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    heap = []
    for i in range(n):
        t, c, r = int(data[2 + 3 * i]), int(data[3 + 3 * i]), int(data[4 + 3 * i])
        heap.append((t, i, 1, t, c, r))  # (ready time, id, page index in streak, t, c, r)
    heapq.heapify(heap)
    time = 0
    for _ in range(k):  # one heap event per page: hopeless for k = 10^9
        time, i, j, t, c, r = heapq.heappop(heap)
        if j < c:
            heapq.heappush(heap, (time + t, i, j + 1, t, c, r))
        else:
            heapq.heappush(heap, (time + r + t, i, 1, t, c, r))
    print(time)


main()
