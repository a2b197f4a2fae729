n = int(input())
s = input().strip()
diff = sum(1 for i, c in enumerate(s) if c != "RG"[i % 2])
print(min(diff, n - diff))
