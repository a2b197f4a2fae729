import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m, k = int(data[0]), int(data[1]), int(data[2])
    w = m + 2
    # pad the grid with a border of rock so that neighbours never leave the array
    grid = b"#" * w + b"".join(b"#" + data[3 + r] + b"#" for r in range(n)) + b"#" * w
    size = len(grid)
    INF = 1 << 62
    steps = (1, -1, w, -w)
    water = [INF] * size
    queue = [i for i in range(size) if grid[i] == 87]  # 'W'
    for i in queue:
        water[i] = 0
    head = 0
    while head < len(queue):
        u = queue[head]
        head += 1
        d = water[u] + 1
        for s in steps:
            v = u + s
            if water[v] == INF and grid[v] != 35:  # not rock
                water[v] = d
                queue.append(v)
    flood = [x * k if x != INF else INF for x in water]  # minute at whose end the cell floods
    start = grid.index(b"S")
    exit_ = grid.index(b"E")
    dist = [-1] * size
    dist[start] = 0
    queue = [start]
    head = 0
    while head < len(queue):
        u = queue[head]
        head += 1
        t = dist[u] + 1
        for s in steps:
            v = u + s
            if dist[v] != -1 or grid[v] == 35:
                continue
            if v == exit_:
                if flood[v] >= t:
                    print(t)
                    return
                continue
            if flood[v] > t:
                dist[v] = t
                queue.append(v)
    print(-1)


main()
