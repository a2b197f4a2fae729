#include <bits/stdc++.h>
using namespace std;

const int MOD = 1000000007;
const int TOP = 200001;
int fact_[TOP + 1], inv_[TOP + 1];

int power(int b, int e) {
    long long r = 1, bb = b;
    for (; e; e >>= 1, bb = bb * bb % MOD)
        if (e & 1) r = r * bb % MOD;
    return (int)r;
}

int paths(int dx, int dy) {
    if (dx < 0 || dy < 0) return 0;
    return (long long)fact_[dx + dy] * inv_[dx] % MOD * inv_[dy] % MOD;
}

int main() {
    fact_[0] = 1;
    for (int i = 1; i <= TOP; i++) fact_[i] = fact_[i - 1] * i % MOD;  // int * int overflows
    inv_[TOP] = power(fact_[TOP], MOD - 2);
    for (int i = TOP; i > 0; i--) inv_[i - 1] = (long long)inv_[i] * i % MOD;
    int q;
    scanf("%d", &q);
    while (q--) {
        int a, b, x, y;
        scanf("%d %d %d %d", &a, &b, &x, &y);
        long long ans = (paths(a, b) - (long long)paths(x, y) * paths(a - x, b - y) % MOD + MOD) % MOD;
        printf("%lld\n", ans);
    }
}
