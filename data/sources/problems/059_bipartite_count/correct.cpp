#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 998244353;

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
    int n;
    scanf("%d", &n);
    vector<vector<ll>> C(n + 1, vector<ll>(n + 1, 0));
    for (int i = 0; i <= n; i++) {
        C[i][0] = 1;
        for (int j = 1; j <= i; j++) C[i][j] = (C[i - 1][j - 1] + C[i - 1][j]) % MOD;
    }
    int top = n * n / 4;
    vector<ll> p2(top + 1, 1);
    for (int i = 1; i <= top; i++) p2[i] = p2[i - 1] * 2 % MOD;
    vector<ll> b(n + 1, 0), c(n + 1, 0);
    for (int k = 0; k <= n; k++)
        for (int j = 0; j <= k; j++) b[k] = (b[k] + C[k][j] * p2[j * (k - j)]) % MOD;
    ll inv2 = power(2, MOD - 2);
    for (int k = 1; k <= n; k++) {
        ll s = 0;
        for (int j = 1; j < k; j++) s = (s + C[k - 1][j - 1] * c[j] % MOD * b[k - j]) % MOD;
        c[k] = (b[k] - s + MOD) % MOD;
        printf("%lld\n", c[k] * inv2 % MOD);
    }
}
