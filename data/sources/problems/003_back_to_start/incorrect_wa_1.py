n = int(input())
s = input().strip()
pos = 0
count = 1  # also counts the starting moment
for ch in s:
    pos += 1 if ch == "R" else -1
    count += pos == 0
print(count)
