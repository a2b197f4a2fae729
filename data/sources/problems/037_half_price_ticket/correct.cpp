#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n, m;
    scanf("%d %d", &n, &m);
    vector<vector<pair<int, ll>>> adj(n + 1);
    for (int j = 0; j < m; j++) {
        int u, v;
        ll w;
        scanf("%d %d %lld", &u, &v, &w);
        adj[u].push_back({v, w});
        adj[v].push_back({u, w});
    }
    const ll INF = LLONG_MAX / 4;
    vector<ll> dist(2 * n + 2, INF);
    priority_queue<pair<ll, int>, vector<pair<ll, int>>, greater<pair<ll, int>>> pq;
    dist[2] = 0;
    pq.push({0, 2});
    while (!pq.empty()) {
        auto [d, s] = pq.top();
        pq.pop();
        if (d > dist[s]) continue;
        int v = s >> 1, used = s & 1;
        for (auto [u, w] : adj[v]) {
            int t = 2 * u + used;
            if (d + w < dist[t]) { dist[t] = d + w; pq.push({dist[t], t}); }
            if (!used && d + w / 2 < dist[t + 1]) { dist[t + 1] = d + w / 2; pq.push({dist[t + 1], t + 1}); }
        }
    }
    ll best = min(dist[2 * n], dist[2 * n + 1]);
    printf("%lld\n", best >= INF ? -1LL : best);
}
