#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    scanf("%d", &n);
    vector<vector<ll>> c(n, vector<ll>(n));
    for (auto &r : c) for (auto &x : r) scanf("%lld", &x);
    int full = 1 << n;
    vector<ll> dp(full, LLONG_MAX);
    dp[0] = 0;
    for (int mask = 0; mask < full; mask++) {
        for (int i = 0; i < n; i++) {
            if (mask >> i & 1) continue;
            ll add = 0;
            for (int j = 0; j < n; j++) if (mask >> j & 1) add += c[j][i];
            dp[mask | 1 << i] = min(dp[mask | 1 << i], dp[mask] + add);
        }
    }
    printf("%lld\n", dp[full - 1]);
}
