#include <bits/stdc++.h>
using namespace std;

const long long MOD = 1000000007;
const int TOP = 200001;
long long fact_[TOP + 1], inv_[TOP + 1];

long long paths(long long dx, long long dy) {
    if (dx < 0 || dy < 0) return 0;
    return fact_[dx + dy] * inv_[dx] % MOD * inv_[dy] % MOD;
}

int main() {
    fact_[0] = 1;
    for (int i = 1; i <= TOP; i++) fact_[i] = fact_[i - 1] * i % MOD;
    inv_[TOP] = pow(fact_[TOP], MOD - 2) % MOD;
    for (int i = TOP; i > 0; i--) inv_[i - 1] = inv_[i] * i % MOD;
    int q;
    scanf("%d", &q);
    while (q--) {
        long long a, b, x, y;
        scanf("%lld %lld %lld %lld", &a, &b, &x, &y);
        printf("%lld\n", (paths(a, b) - paths(x, y) * paths(a - x, b - y) % MOD + MOD) % MOD);
    }
}
