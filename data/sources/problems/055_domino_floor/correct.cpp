#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

int main() {
    int n, m;
    scanf("%d %d", &n, &m);
    vector<string> g(n);
    char buf[20];
    for (int i = 0; i < n; i++) { scanf("%s", buf); g[i] = buf; }
    int size = 1 << m;
    vector<ll> dp(size, 0), ndp(size);
    dp[0] = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            fill(ndp.begin(), ndp.end(), 0);
            int bit = 1 << j;
            bool blocked = g[i][j] == '#';
            bool down = i + 1 < n && g[i + 1][j] != '#';
            bool right = j + 1 < m && g[i][j + 1] != '#';
            for (int mask = 0; mask < size; mask++) {
                ll v = dp[mask];
                if (!v) continue;
                if (blocked) {
                    if (!(mask & bit)) ndp[mask] = (ndp[mask] + v) % MOD;
                    continue;
                }
                if (mask & bit) { ndp[mask ^ bit] = (ndp[mask ^ bit] + v) % MOD; continue; }
                if (down) ndp[mask | bit] = (ndp[mask | bit] + v) % MOD;
                if (right && !(mask & (bit << 1))) ndp[mask | (bit << 1)] = (ndp[mask | (bit << 1)] + v) % MOD;
            }
            swap(dp, ndp);
        }
    printf("%lld\n", dp[0]);
}
