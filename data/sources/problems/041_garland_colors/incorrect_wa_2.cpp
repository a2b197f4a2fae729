#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

ll power(ll b, int e) {
    ll r = 1;
    b %= MOD;
    while (e > 0) {
        if (e & 1) r = r * b % MOD;
        b = b * b % MOD;
        e >>= 1;
    }
    return r;
}

int main() {
    ll N, k;
    int m;
    scanf("%lld %lld %d", &N, &k, &m);
    vector<ll> p(m), c(m);
    for (int i = 0; i < m; i++) scanf("%lld %lld", &p[i], &c[i]);
    if (m == 0) {
        printf("%lld\n", k % MOD * power(k - 1, N - 1) % MOD);
        return 0;
    }
    ll inv_k = power(k, MOD - 2);
    ll ans = power(k - 1, p[0] - 1) * power(k - 1, N - p[m - 1]) % MOD;
    for (int i = 0; i + 1 < m; i++) {
        ll g = p[i + 1] - p[i];
        ll big = power(k - 1, g), sign = g % 2 == 0 ? 1 : MOD - 1, ways;
        if (c[i] == c[i + 1]) ways = (big + (k - 1) % MOD * sign) % MOD * inv_k % MOD;
        else ways = (big - sign + MOD) % MOD * inv_k % MOD;
        ans = ans * ways % MOD;
    }
    printf("%lld\n", ans);
}
