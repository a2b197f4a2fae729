#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef unsigned long long ull;

int main() {
    ll n;
    int k;
    scanf("%lld %d", &n, &k);
    vector<ull> a(k);
    for (auto &x : a) scanf("%llu", &x);
    int full = 1 << k;
    ll big = n + 1;
    vector<ll> lc(full, 1);
    vector<int> pop(full, 0);
    vector<__int128> S(k + 1, 0);
    S[0] = n;
    for (int mask = 1; mask < full; mask++) {
        int low = mask & -mask;
        int b = __builtin_ctz(mask);
        ll prev = lc[mask ^ low];
        pop[mask] = pop[mask ^ low] + 1;
        if (prev >= big) { lc[mask] = big; continue; }
        ll g = __gcd(prev, a[b]);
        __int128 v = (__int128)(prev / g) * a[b];
        if (v > n) { lc[mask] = big; continue; }
        lc[mask] = (ll)v;
        S[pop[mask]] += n / (ll)v;
    }
    for (int m = 0; m <= k; m++) {
        __int128 tot = 0, c = 1;
        for (int j = m; j <= k; j++) {
            if (j > m) c = c * j / (j - m);
            if ((j - m) & 1) tot -= c * S[j]; else tot += c * S[j];
        }
        printf("%lld%c", (ll)tot, m == k ? '\n' : ' ');
    }
}
