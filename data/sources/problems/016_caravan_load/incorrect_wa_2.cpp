#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, d;
    scanf("%d %d", &n, &d);
    vector<int> w(n);
    for (auto &x : w) scanf("%d", &x);
    int lo = *max_element(w.begin(), w.end());
    int hi = accumulate(w.begin(), w.end(), 0);  // the total weight overflows int
    auto trips = [&](int cap) {
        int t = 1, load = 0;
        for (int x : w) {
            if (load + x > cap) { t++; load = 0; }
            load += x;
        }
        return t;
    };
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (trips(mid) <= d) hi = mid;
        else lo = mid + 1;
    }
    printf("%d\n", lo);
}
