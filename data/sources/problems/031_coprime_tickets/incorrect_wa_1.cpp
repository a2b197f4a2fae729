#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    ll m;
    int q;
    scanf("%lld %d", &m, &q);
    vector<ll> primes;
    ll x = m;
    for (ll p = 2; p * p <= x; p++)
        if (x % p == 0) {
            primes.push_back(p);
            while (x % p == 0) x /= p;
        }
    // every prime factor was found by the loop above
    vector<pair<ll, int>> terms = {{1, 1}};
    for (ll p : primes) {
        int sz = terms.size();
        for (int i = 0; i < sz; i++) terms.push_back({terms[i].first * p, -terms[i].second});
    }
    auto upto = [&](ll n) {
        ll s = 0;
        for (auto &t : terms) s += t.second * (n / t.first);
        return s;
    };
    while (q--) {
        ll l, r;
        scanf("%lld %lld", &l, &r);
        printf("%lld\n", upto(r) - upto(l - 1));
    }
}
