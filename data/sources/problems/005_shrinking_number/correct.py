s = input().strip()
r = sum(map(int, s)) % 9
print(r if r else 9)
