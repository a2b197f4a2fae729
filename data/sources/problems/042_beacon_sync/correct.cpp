#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef __int128 i128;

// returns g = gcd(a, b) and x with a * x = g (mod b)
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
        ll g = ext_gcd(mod % m, m, x, y);  // gcd(mod, m)
        ll diff = r - a % m;
        if (diff % g != 0) { puts("-1"); return 0; }
        ll step = m / g;
        ll t = 0;
        if (step > 1) {
            ll d = ((diff / g) % step + step) % step;
            ll inv = ((x % step) + step) % step;  // inverse of mod / g modulo step
            t = (ll)((i128)d * inv % step);
        }
        a = (ll)(((i128)a + (i128)mod * t) % ((i128)mod * step));
        mod *= step;
    }
    printf("%lld\n", a);
}
