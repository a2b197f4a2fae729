import sys


def main():
    s = sys.stdin.buffer.readline().strip()
    n = len(s)
    z = [0] * (n + 1)
    l = r = 0
    for i in range(1, n):
        if i < r:
            z[i] = min(r - i, z[i - l])
        while s[z[i]] == s[i + z[i]]:  # forgot to stop at the end of the string
            z[i] += 1
        if i + z[i] > r:
            l, r = i, i + z[i]
    total = 0
    covered = 0
    for p in range(1, n + 1):
        reach = max(p, p + z[p]) if p < n else n
        for k in range(max(covered + 1, p), reach + 1):
            total += p
        covered = max(covered, reach)
    print(total)


main()
