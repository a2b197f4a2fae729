n = int(input())
s = list(input().strip())
count = 0
for i in range(1, n):  # fixes conflicts from left to right, never touches the first bulb
    if s[i] == s[i - 1]:
        s[i] = "R" if s[i] == "G" else "G"
        count += 1
print(count)
