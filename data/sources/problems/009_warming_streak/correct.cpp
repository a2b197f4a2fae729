#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<int> t(n);
    for (auto &x : t) scanf("%d", &x);
    int best = 1, cur = 1;
    for (int i = 1; i < n; i++) {
        cur = t[i] > t[i - 1] ? cur + 1 : 1;
        best = max(best, cur);
    }
    printf("%d\n", best);
}
