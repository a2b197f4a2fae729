def walk(s, i, pos):
    if i == len(s):
        return 0
    pos += 1 if s[i] == "R" else -1
    return (pos == 0) + walk(s, i + 1, pos)


n = int(input())
s = input().strip()
print(walk(s, 0, 0))
