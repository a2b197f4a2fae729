#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

// walks bulb by bulb: s = ways where the current bulb has the colour of the last fixed bulb,
// o = ways for each one particular other colour
int main() {
    ll N, k;
    int m;
    scanf("%lld %lld %d", &N, &k, &m);
    vector<ll> p(m), c(m);
    for (int i = 0; i < m; i++) scanf("%lld %lld", &p[i], &c[i]);
    ll ans;
    if (m == 0) {
        ans = k % MOD;
        for (ll i = 1; i < N; i++) ans = ans * ((k - 1) % MOD) % MOD;
        printf("%lld\n", ans);
        return 0;
    }
    ans = 1;
    for (ll i = 1; i < p[0]; i++) ans = ans * ((k - 1) % MOD) % MOD;
    for (ll i = p[m - 1]; i < N; i++) ans = ans * ((k - 1) % MOD) % MOD;
    for (int i = 0; i + 1 < m; i++) {
        ll s = 1, o = 0;
        for (ll step = p[i]; step < p[i + 1]; step++) {
            ll ns = (k - 1) % MOD * o % MOD;
            ll no = (s + (k - 2) % MOD * o) % MOD;
            s = ns; o = no;
        }
        ans = ans * (c[i] == c[i + 1] ? s : o) % MOD;
    }
    printf("%lld\n", ans);
}
