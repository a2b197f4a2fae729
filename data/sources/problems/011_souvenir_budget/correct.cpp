#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, q;
    scanf("%d %d", &n, &q);
    vector<int> p(n);
    for (auto &x : p) scanf("%d", &x);
    sort(p.begin(), p.end());
    for (int j = 0; j < q; j++) {
        int b;
        scanf("%d", &b);
        printf("%d%c", (int)(upper_bound(p.begin(), p.end(), b) - p.begin()), j + 1 == q ? '\n' : ' ');
    }
}
