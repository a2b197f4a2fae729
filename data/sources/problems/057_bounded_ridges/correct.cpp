#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 998244353;

ll power(ll b, ll e) {
    ll r = 1;
    b %= MOD;
    while (e) {
        if (e & 1) r = r * b % MOD;
        b = b * b % MOD;
        e >>= 1;
    }
    return r;
}

vector<ll> f, inv;

ll within(ll n, ll h) {
    if (h < 0) return 0;
    ll w = h + 2, total = 0;
    for (ll k = -(n / w) - 1; k <= n / w + 1; k++) {
        ll j = n + k * w;
        if (j >= 0 && j <= 2 * n) total = (total + inv[j] * inv[2 * n - j]) % MOD;
        j--;
        if (j >= 0 && j <= 2 * n) total = (total - inv[j] * inv[2 * n - j] % MOD + MOD) % MOD;
    }
    return total * f[2 * n] % MOD;
}

int main() {
    int t;
    scanf("%d", &t);
    vector<pair<ll, ll>> qs(t);
    ll mx = 1;
    for (auto &q : qs) { scanf("%lld %lld", &q.first, &q.second); mx = max(mx, q.first); }
    int N = 2 * mx;
    f.assign(N + 1, 1);
    inv.assign(N + 1, 1);
    for (int i = 1; i <= N; i++) f[i] = f[i - 1] * i % MOD;
    inv[N] = power(f[N], MOD - 2);
    for (int i = N; i > 0; i--) inv[i - 1] = inv[i] * i % MOD;
    for (auto [n, h] : qs) printf("%lld\n", (within(n, h) - within(n, h - 1) + MOD) % MOD);
}
