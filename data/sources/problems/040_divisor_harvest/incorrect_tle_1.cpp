#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

int main() {
    ll n;
    scanf("%lld", &n);
    ll total = 0;
    for (ll d = 1; d <= n; d++) total = (total + d % MOD * ((n / d) % MOD)) % MOD;  // d picks on every multiple
    printf("%lld\n", total);
}
