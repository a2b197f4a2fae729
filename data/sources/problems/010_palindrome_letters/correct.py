from collections import Counter

input()
odd = sum(c % 2 for c in Counter(input().strip()).values())
print(max(0, odd - 1))
