#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    long long k;
    scanf("%d %lld", &n, &k);
    vector<long long> t(n), c(n), cyc(n);
    for (int i = 0; i < n; i++) {
        long long r;
        scanf("%lld %lld %lld", &t[i], &c[i], &r);
        cyc[i] = c[i] * t[i] + r;
    }
    long long lo = 0, hi = 4000000000000000000LL;
    while (hi - lo > 1) {
        long long mid = lo + (hi - lo) / 2;
        long long total = 0;
        for (int i = 0; i < n; i++)  // no early exit: the sum can overflow
            total += (mid / cyc[i]) * c[i] + min(c[i], (mid % cyc[i]) / t[i]);
        if (total >= k) hi = mid; else lo = mid;
    }
    printf("%lld\n", hi);
}
