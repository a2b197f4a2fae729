#include <bits/stdc++.h>
using namespace std;
const int MOD = 998244353;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        int n, h;
        scanf("%d %d", &n, &h);
        // dp over heights 0..h, counting ridges that stay within [0, h] and within [0, h - 1]
        auto count = [&](int top) -> long long {
            if (top < 0) return 0;
            vector<long long> dp(top + 2, 0), nd(top + 2, 0);
            dp[0] = 1;
            for (int s = 0; s < 2 * n; s++) {
                for (int y = 0; y <= top; y++) {
                    long long v = 0;
                    if (y > 0) v += dp[y - 1];
                    if (y < top) v += dp[y + 1];
                    nd[y] = v % MOD;
                }
                swap(dp, nd);
            }
            return dp[0];
        };
        printf("%lld\n", ((count(h) - count(h - 1)) % MOD + MOD) % MOD);
    }
}
