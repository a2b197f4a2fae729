x = int(input())
while x >= 10:
    total = 0
    while x:
        total += x % 10
        x //= 10
    x = total
print(x)
