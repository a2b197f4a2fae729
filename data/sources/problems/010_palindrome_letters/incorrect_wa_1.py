from collections import Counter

input()
print(sum(c % 2 for c in Counter(input().strip()).values()))  # forgets the middle tile may stay unpaired
