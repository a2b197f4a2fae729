#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

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

int main() {
    int h, w, k;
    scanf("%d %d %d", &h, &w, &k);
    vector<pair<int, int>> p(k);
    for (auto &q : p) { scanf("%d %d", &q.first, &q.second); q.first--; q.second--; }
    sort(p.begin(), p.end());
    int N = h + w;
    vector<ll> f(N + 1), inv(N + 1);
    f[0] = 1;
    for (int i = 1; i <= N; i++) f[i] = f[i - 1] * i % MOD;
    inv[N] = power(f[N], MOD - 2);
    for (int i = N; i > 0; i--) inv[i - 1] = inv[i] * i % MOD;
    auto paths = [&](int dx, int dy) -> ll {
        if (dx < 0 || dy < 0) return 0;
        return f[dx + dy] * inv[dx] % MOD * inv[dy] % MOD;
    };
    vector<ll> g1(k), g2(k);
    for (int i = 0; i < k; i++) {
        ll s1 = 0, s2 = 0;
        for (int j = 0; j < i; j++) {
            ll q = paths(p[i].first - p[j].first, p[i].second - p[j].second);
            if (!q) continue;
            s1 = (s1 + g1[j] * q) % MOD;
            s2 = (s2 + (g1[j] - g2[j] + MOD) % MOD * q) % MOD;
        }
        g1[i] = (paths(p[i].first, p[i].second) - s1 + MOD) % MOD;
        g2[i] = s2;
    }
    ll ans = paths(h - 1, w - 1);
    for (int j = 0; j < k; j++) ans = (ans - g2[j] * paths(h - 1 - p[j].first, w - 1 - p[j].second) % MOD + MOD) % MOD;
    printf("%lld\n", ans);
}
