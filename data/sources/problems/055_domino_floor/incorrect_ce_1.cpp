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
            for (int mask = 0; mask < size; mask++) {
                ll v = dp[mask];
                if (!v) continue;
                if (g[i][j] == '#') {
                    if (!(mask & bit)) ndp[mask] = (ndp[mask] + v) % MOD;
                    continue;
                }
                if (mask & bit) { ndp[mask ^ bit] = (ndp[mask ^ bit] + v) % MOD; continue; }
                if (i + 1 < n && g[i + 1][j] != '#') {
                    int nm = mask | bit;
                    ndp[nm] = (ndp[nm] + v) % MOD;
                }
                if (j + 1 < m && g[i][j + 1] != '#' && !(mask & (bit << 1))) {
                    int nm = mask | (bit << 1);
                    ndp[nmask] = (ndp[nmask] + v) % MOD;
                }
            }
            swap(dp, ndp);
        }
    printf("%lld\n", dp[0]);
}
