#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<int> t(n);
    for (auto &x : t) scanf("%d", &x);
    int best = 1, cur = 1;
    for (int i = 1; i < n; i++) {
        if (t[i] > t[i - 1]) {
            cur++;
        } else {
            best = max(best, cur);  // a streak that lasts until the last day is never recorded
            cur = 1;
        }
    }
    printf("%d\n", best);
}
