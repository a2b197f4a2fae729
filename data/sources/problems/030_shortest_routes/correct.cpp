#include <bits/stdc++.h>
using namespace std;
const long long MOD = 1000000007LL;

int main() {
    int n, m;
    scanf("%d %d", &n, &m);
    vector<vector<int>> adj(n + 1);
    for (int i = 0; i < m; i++) {
        int u, v;
        scanf("%d %d", &u, &v);
        adj[u].push_back(v);
        adj[v].push_back(u);
    }
    vector<int> dist(n + 1, -1);
    vector<long long> ways(n + 1, 0);
    queue<int> q;
    dist[1] = 0; ways[1] = 1; q.push(1);
    while (!q.empty()) {
        int u = q.front(); q.pop();
        for (int v : adj[u]) {
            if (dist[v] == -1) { dist[v] = dist[u] + 1; ways[v] = ways[u]; q.push(v); }
            else if (dist[v] == dist[u] + 1) ways[v] = (ways[v] + ways[u]) % MOD;
        }
    }
    if (dist[n] == -1) puts("-1");
    else printf("%d %lld\n", dist[n], ways[n]);
}
