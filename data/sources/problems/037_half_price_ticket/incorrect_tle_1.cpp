#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int n, m;
vector<array<ll, 3>> e;

// plain Dijkstra where edge `cheap` costs half
ll run(int cheap) {
    vector<vector<pair<int, ll>>> adj(n + 1);
    for (int j = 0; j < m; j++) {
        ll w = j == cheap ? e[j][2] / 2 : e[j][2];
        adj[e[j][0]].push_back({(int)e[j][1], w});
        adj[e[j][1]].push_back({(int)e[j][0], w});
    }
    vector<ll> d(n + 1, LLONG_MAX);
    priority_queue<pair<ll, int>, vector<pair<ll, int>>, greater<pair<ll, int>>> pq;
    d[1] = 0;
    pq.push({0, 1});
    while (!pq.empty()) {
        auto [dv, v] = pq.top();
        pq.pop();
        if (dv > d[v]) continue;
        for (auto [u, w] : adj[v])
            if (dv + w < d[u]) { d[u] = dv + w; pq.push({d[u], u}); }
    }
    return d[n];
}

int main() {
    scanf("%d %d", &n, &m);
    e.resize(m);
    for (auto &x : e) scanf("%lld %lld %lld", &x[0], &x[1], &x[2]);
    ll best = run(-1);
    for (int j = 0; j < m; j++) best = min(best, run(j));  // try the voucher on every line
    printf("%lld\n", best == LLONG_MAX ? -1LL : best);
}
