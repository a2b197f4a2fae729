#include <bits/stdc++.h>
using namespace std;
typedef unsigned long long ull;
const ull MOD = 1000000007ULL;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long A, B, C;
        scanf("%lld %lld %lld", &A, &B, &C);
        ull cur[8] = {0};
        cur[7] = 1;
        for (int bit = 59; bit >= 0; bit--) {
            int ba = A >> bit & 1, bb = B >> bit & 1, bc = C >> bit & 1;
            ull nxt[8] = {0};
            for (int st = 0; st < 8; st++) {
                int ta = st & 1, tb = st >> 1 & 1, tc = st >> 2 & 1;
                const int xs[3] = {0, 1, 0}, ys[3] = {0, 0, 1};
                for (int c = 0; c < 3; c++) {
                    int x = xs[c], y = ys[c], z = x | y;
                    if ((ta && x > ba) || (tb && y > bb) || (tc && z > bc)) continue;
                    int nt = (ta && x == ba) | (tb && y == bb) << 1 | (tc && z == bc) << 2;
                    nxt[nt] += cur[st];  // reduced only at the very end
                }
            }
            memcpy(cur, nxt, sizeof cur);
        }
        ull ans = 0;
        for (int st = 0; st < 8; st++) ans += cur[st];
        printf("%llu\n", ans % MOD);
    }
}
