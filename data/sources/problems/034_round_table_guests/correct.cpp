#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;
const int N = 200005;
ll f[N], inv_f[N];

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

ll comb(ll a, ll b) {
    if (a < 0 || b < 0 || b > a) return 0;
    return f[a] * inv_f[b] % MOD * inv_f[a - b] % MOD;
}

int main() {
    f[0] = 1;
    for (int i = 1; i < N; i++) f[i] = f[i - 1] * i % MOD;
    inv_f[N - 1] = power(f[N - 1], MOD - 2);
    for (int i = N - 1; i > 0; i--) inv_f[i - 1] = inv_f[i] * i % MOD;
    int q;
    scanf("%d", &q);
    while (q--) {
        ll n, k;
        scanf("%lld %lld", &n, &k);
        if (k == 0) puts("1");
        else printf("%lld\n", (comb(n - k, k) + comb(n - k - 1, k - 1)) % MOD);
    }
}
