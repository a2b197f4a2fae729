#include <bits/stdc++.h>
using namespace std;

int main() {
    const long long MOD = 1000000007;
    int n, k, m;
    scanf("%d %d %d", &n, &k, &m);
    vector<char> cracked(n + 1, 0);
    for (int i = 0; i < m; i++) {
        int c;
        scanf("%d", &c);
        cracked[c] = 1;
    }
    vector<long long> dp(n + 1, 0);
    dp[0] = 1;
    for (int i = 1; i <= n; i++) {
        if (cracked[i]) continue;
        for (int j = max(0, i - k); j < i; j++) dp[i] = (dp[i] + dp[j]) % MOD;  // O(n k) in total
    }
    printf("%lld\n", dp[n]);
}
