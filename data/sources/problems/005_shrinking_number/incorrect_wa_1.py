s = input().strip()
print(sum(map(int, s)) % 9)  # prints 0 instead of 9 for multiples of nine
