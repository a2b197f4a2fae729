#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, d;
    scanf("%d %d", &n, &d);
    vector<long long> w(n);
    for (auto &x : w) scanf("%lld", &x);
    long long cap = *max_element(w.begin(), w.end());
    while (true) {  // try every capacity in increasing order
        int t = 1;
        long long load = 0;
        for (long long x : w) {
            if (load + x > cap) { t++; load = 0; }
            load += x;
        }
        if (t <= d) break;
        cap++;
    }
    printf("%lld\n", cap);
}
