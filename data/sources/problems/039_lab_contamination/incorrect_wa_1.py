import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    c = [[int(x) for x in data[1 + j * n:1 + (j + 1) * n]] for j in range(n)]
    done = []
    left = set(range(n))
    total = 0
    while left:
        # run next the experiment that is cheapest to run right now
        best = min(left, key=lambda i: (sum(c[j][i] for j in done), i))
        total += sum(c[j][best] for j in done)
        done.append(best)
        left.remove(best)
    print(total)


main()
