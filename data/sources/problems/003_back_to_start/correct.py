n = int(input())
s = input().strip()
pos = count = 0
for ch in s:
    pos += 1 if ch == "R" else -1
    count += pos == 0
print(count)
