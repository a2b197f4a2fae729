#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

ll ext_gcd(ll a, ll b, ll &x, ll &y) {
    if (b == 0) { x = 1; y = 0; return a; }
    ll x1, y1;
    ll g = ext_gcd(b, a % b, x1, y1);
    x = y1;
    y = x1 - (a / b) * y1;
    return g;
}

int main() {
    int n;
    scanf("%d", &n);
    ll a = 0, mod = 1;
    for (int i = 0; i < n; i++) {
        ll r, m;
        scanf("%lld %lld", &r, &m);
        ll x, y;
        ll g = ext_gcd(mod % m, m, x, y);
        if ((r - a) % g != 0) { puts("-1"); return 0; }
        ll step = m / g;
        ll t = (r - a) / g % step * (x % step) % step;
        a = a + mod * t;
        mod *= step;
        a %= mod;
    }
    printf("%lld\n", a);
}
