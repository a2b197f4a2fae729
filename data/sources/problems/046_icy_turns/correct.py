import sys


def main():
    data = sys.stdin.buffer.read().split()
    r, c = int(data[0]), int(data[1])
    W = c + 2
    # padded grid: 0 rock, 1 plain, 2 ice
    g = bytearray((r + 2) * W)
    start = target = -1
    for i in range(r):
        row = data[2 + i]
        base = (i + 1) * W + 1
        for j, ch in enumerate(row):
            if ch == 35:  # '#'
                continue
            g[base + j] = 2 if ch == 42 else 1  # '*'
            if ch == 83:
                start = base + j
            elif ch == 84:
                target = base + j
    delta = (-W, 1, W, -1)  # up, right, down, left
    dist = bytearray(4 * len(g))  # 0 = not finalised
    cur = [start * 4 + k for k in range(4)]
    d = 0
    while cur:
        stack = []
        for st in cur:
            if not dist[st]:
                dist[st] = 1
                stack.append(st)
        nxt = []
        while stack:
            st = stack.pop()
            cell = st >> 2
            if cell == target:
                print(d)
                return
            k = st & 3
            nc = cell + delta[k]
            if g[nc]:
                ns = nc * 4 + k
                if not dist[ns]:
                    dist[ns] = 1
                    stack.append(ns)
            if g[cell] == 1:
                b = cell * 4
                nxt.append(b + ((k + 1) & 3))
                nxt.append(b + ((k + 3) & 3))
        cur = nxt
        d += 1
    print(-1)


main()
