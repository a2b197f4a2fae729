import sys

MOD = 10**9 + 7
data = sys.stdin.buffer.read().split()
n, k, m = int(data[0]), int(data[1]), int(data[2])
cracked = bytearray(n + 1)
for x in data[3:3 + m]:
    cracked[int(x)] = 1
dp = [0] * (n + 1)
dp[0] = 1
window = 1
for i in range(1, n + 1):
    cur = 0 if cracked[i] else window
    dp[i] = cur
    window += cur
    if i > k:  # off by one: the floor (step 0) never leaves the window
        window -= dp[i - k]
    window %= MOD
print(dp[n])
