#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef __int128 i128;
const ll MOD = 1000000007LL;

// largest m with m(m+1)/2 <= x
ll tri_root(ll x) {
    ll m = (ll)((sqrt((double)(8 * x + 1)) - 1) / 2);  // double is "precise enough"
    return m;
}

ll prefix_mod(ll x) {
    if (x <= 0) return 0;
    ll m = tri_root(x);
    i128 full = (i128)m * (m + 1) / 2;           // exact, < 2^63
    ll rest = x - (ll)full;                       // tokens of value m + 1
    i128 sq = (i128)m * (m + 1) % (6 * MOD);
    sq = sq * ((2 * m + 1) % (6 * MOD)) % (6 * MOD);
    ll sumsq = (ll)(sq / 6) % MOD;               // m(m+1)(2m+1)/6 mod p
    ll part = (ll)((i128)((m + 1) % MOD) * (rest % MOD) % MOD);
    return (sumsq + part) % MOD;
}

int main() {
    int q;
    scanf("%d", &q);
    while (q--) {
        ll l, r;
        scanf("%lld %lld", &l, &r);
        printf("%lld\n", ((prefix_mod(r) - prefix_mod(l - 1)) % MOD + MOD) % MOD);
    }
}
