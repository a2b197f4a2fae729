#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

vector<pair<ll, ll>> subsets(const vector<pair<ll, ll>> &items) {
    vector<pair<ll, ll>> cur = {{0, 0}};
    for (auto [w, v] : items) {
        size_t s = cur.size();
        for (size_t i = 0; i < s; i++) cur.push_back({cur[i].first + w, cur[i].second + v});
    }
    return cur;
}

int main() {
    int n;
    ll cap;
    scanf("%d %lld", &n, &cap);
    vector<pair<ll, ll>> items(n);
    for (auto &it : items) scanf("%lld %lld", &it.first, &it.second);
    vector<pair<ll, ll>> L(items.begin(), items.begin() + n / 2), R(items.begin() + n / 2, items.end());
    auto left = subsets(L), right = subsets(R);
    sort(right.begin(), right.end());
    sort(left.begin(), left.end());
    vector<ll> bv(right.size()), bw(right.size());
    ll curv = -1, curw = 0;
    for (size_t i = 0; i < right.size(); i++) {
        if (right[i].second > curv) { curv = right[i].second; curw = right[i].first; }
        bv[i] = curv;
        bw[i] = curw;
    }
    ll ansv = -1, answ = 0;
    long long ptr = (ll)right.size() - 1;
    for (auto [w, v] : left) {
        ll room = cap - w;
        if (room < 0) break;
        while (right[ptr].first > room) ptr--;
        ll tv = v + bv[ptr], tw = w + bw[ptr];
        if (tv > ansv || (tv == ansv && tw < answ)) { ansv = tv; answ = tw; }
    }
    printf("%lld %lld\n", ansv, answ);
}
