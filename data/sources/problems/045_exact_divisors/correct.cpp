#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef __int128 lll;

int main() {
    ll n;
    int k;
    scanf("%lld %d", &n, &k);
    vector<ll> a(k);
    for (auto &x : a) scanf("%lld", &x);
    int full = 1 << k;
    ll big = n + 1;
    vector<ll> lc(full, 1);
    vector<int> pop(full, 0);
    vector<lll> S(k + 1, 0);
    S[0] = n;
    for (int mask = 1; mask < full; mask++) {
        int low = mask & -mask;
        int b = __builtin_ctz(mask);
        ll prev = lc[mask ^ low];
        pop[mask] = pop[mask ^ low] + 1;
        if (prev >= big) { lc[mask] = big; continue; }
        lll v = (lll)(prev / __gcd(prev, a[b])) * a[b];
        if (v > n) { lc[mask] = big; continue; }
        lc[mask] = (ll)v;
        S[pop[mask]] += n / (ll)v;
    }
    vector<vector<lll>> C(k + 1, vector<lll>(k + 1, 0));
    for (int i = 0; i <= k; i++) {
        C[i][0] = 1;
        for (int j = 1; j <= i; j++) C[i][j] = C[i - 1][j - 1] + C[i - 1][j];
    }
    for (int m = 0; m <= k; m++) {
        lll tot = 0;
        for (int j = m; j <= k; j++) {
            lll term = C[j][m] * S[j];
            if ((j - m) & 1) tot -= term; else tot += term;
        }
        printf("%lld%c", (ll)tot, m == k ? '\n' : ' ');
    }
}
