#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef unsigned long long ull;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        int n;
        scanf("%d", &n);
        vector<ull> a(n), g(n);
        ull X = 0;
        for (int i = 0; i < n; i++) {
            scanf("%llu", &a[i]);
            ull y = a[i] + 1;
            y >>= __builtin_ctzll(y);
            g[i] = y >> 1;
            X ^= g[i];
        }
        if (X == 0) { puts("0"); continue; }
        long long cnt = 0;
        for (int i = 0; i < n; i++) {
            ull x = a[i];
            ull odd = 2 * (g[i] ^ X) + 1;
            ull lo = (x + 1) / 2 + 1, hi = x;
            if (odd > hi) continue;
            ull v = odd;
            while (v < lo) v <<= 1;
            if (v <= hi) cnt++;
        }
        printf("%lld\n", cnt);
    }
}
