#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

int main() {
    ll n;
    scanf("%lld", &n);
    ll total = 0;
    for (ll d = 1; d <= n;) {
        ll q = n / d, last = n / q;
        __int128 block = (__int128)(d + last) * (last - d + 1) / 2;  // sum of d..last
        total = (total + (ll)(block % MOD) * (q % MOD)) % MOD;
        d = last + 1;
    }
    printf("%lld\n", total);
}
