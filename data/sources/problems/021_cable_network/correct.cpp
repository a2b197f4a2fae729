#include <bits/stdc++.h>
using namespace std;

int n;
vector<vector<int>> adj;

pair<int, int> bfs(int src) {
    vector<int> dist(n + 1, -1), order{src};
    dist[src] = 0;
    for (size_t i = 0; i < order.size(); i++) {
        int v = order[i];
        for (int u : adj[v])
            if (dist[u] < 0) { dist[u] = dist[v] + 1; order.push_back(u); }
    }
    return {order.back(), dist[order.back()]};
}

int main() {
    scanf("%d", &n);
    adj.assign(n + 1, {});
    for (int i = 2; i <= n; i++) {
        int p;
        scanf("%d", &p);
        adj[i].push_back(p);
        adj[p].push_back(i);
    }
    int far = bfs(1).first;
    printf("%d\n", bfs(far).second);
}
