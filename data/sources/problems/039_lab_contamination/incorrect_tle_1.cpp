#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    scanf("%d", &n);
    vector<vector<ll>> c(n, vector<ll>(n));
    for (auto &r : c) for (auto &x : r) scanf("%lld", &x);
    vector<int> p(n);
    iota(p.begin(), p.end(), 0);
    ll best = LLONG_MAX;
    do {  // every order of the experiments
        ll s = 0;
        for (int x = 0; x < n; x++)
            for (int y = x + 1; y < n; y++) s += c[p[x]][p[y]];
        best = min(best, s);
    } while (next_permutation(p.begin(), p.end()));
    printf("%lld\n", best);
}
