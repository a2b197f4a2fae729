#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, d;
    scanf("%d %d", &n, &d);
    vector<long long> w(n);
    for (auto &x : w) scanf("%lld", &x);
    long long lo = *max_element(w.begin(), w.end()), hi = accumulate(w.begin(), w.end(), 0LL);
    auto trips = [&](long long cap) {
        int t = 1;
        long long load = 0;
        for (long long x : w) {
            if (load + x > cap) { t++; load = 0; }
            load += x;
        }
        return t;
    };
    while (lo < hi) {
        long long mid = (lo + hi) / 2;
        if (trips(mid) <= d) hi = mid;
        else lo = mid + 1;
    }
    printf("%lld\n", lo);
}
