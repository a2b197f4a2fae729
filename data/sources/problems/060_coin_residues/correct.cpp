#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int k;
    ll T;
    scanf("%d %lld", &k, &T);
    vector<ll> coins(k);
    for (auto &c : coins) scanf("%lld", &c);
    sort(coins.begin(), coins.end());
    coins.erase(unique(coins.begin(), coins.end()), coins.end());
    ll m = coins[0];
    const ll INF = LLONG_MAX / 4;
    vector<ll> dist(m, INF);
    dist[0] = 0;
    // Dijkstra over residues modulo the smallest coin
    priority_queue<pair<ll, int>, vector<pair<ll, int>>, greater<>> pq;
    pq.push({0, 0});
    while (!pq.empty()) {
        auto [d, r] = pq.top();
        pq.pop();
        if (d > dist[r]) continue;
        for (size_t i = 1; i < coins.size(); i++) {
            int nr = (r + coins[i]) % m;
            if (d + coins[i] < dist[nr]) {
                dist[nr] = d + coins[i];
                pq.push({dist[nr], nr});
            }
        }
    }
    ll total = 0;
    for (ll d : dist)
        if (d <= T) total += (T - d) / m + 1;
    printf("%lld\n", total - 1);
}
