#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 1000000007LL;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        ll A, B, C;
        scanf("%lld %lld %lld", &A, &B, &C);
        ll cur[8] = {0};
        cur[7] = 1;  // bit 0: a tight, bit 1: b tight, bit 2: sum tight
        for (int bit = 59; bit >= 0; bit--) {
            int ba = A >> bit & 1, bb = B >> bit & 1, bc = C >> bit & 1;
            ll nxt[8] = {0};
            for (int st = 0; st < 8; st++) {
                if (!cur[st]) continue;
                int ta = st & 1, tb = st >> 1 & 1, tc = st >> 2 & 1;
                const int xs[3] = {0, 1, 0}, ys[3] = {0, 0, 1};
                for (int c = 0; c < 3; c++) {
                    int x = xs[c], y = ys[c], z = x | y;
                    if ((ta && x > ba) || (tb && y > bb) || (tc && z > bc)) continue;
                    int nt = (ta && x == ba) | (tb && y == bb) << 1 | (tc && z == bc) << 2;
                    nxt[nt] = (nxt[nt] + cur[st]) % MOD;
                }
            }
            memcpy(cur, nxt, sizeof cur);
        }
        ll ans = 0;
        for (int st = 0; st < 8; st++) ans = (ans + cur[st]) % MOD;
        printf("%lld\n", ans);
    }
}
