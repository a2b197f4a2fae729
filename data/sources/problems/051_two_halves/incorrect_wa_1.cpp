#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    ll cap;
    scanf("%d %lld", &n, &cap);
    vector<pair<ll, ll>> it(n);
    for (auto &p : it) scanf("%lld %lld", &p.first, &p.second);
    // best worth per kilogram first
    sort(it.begin(), it.end(), [](const pair<ll, ll> &a, const pair<ll, ll> &b) {
        return (__int128)a.second * b.first > (__int128)b.second * a.first;
    });
    ll w = 0, v = 0;
    for (auto [wi, vi] : it)
        if (w + wi <= cap) { w += wi; v += vi; }
    printf("%lld %lld\n", v, w);
}
