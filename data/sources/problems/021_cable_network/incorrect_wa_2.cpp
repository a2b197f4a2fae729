#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<vector<int>> adj(n + 1);
    for (int i = 2; i <= n; i++) {
        int p;
        scanf("%d", &p);
        adj[i].push_back(p);
        adj[p].push_back(i);
    }
    // depth of the deepest house in the subtree of every neighbour of house 1;
    // assumes the longest route passes through house 1
    vector<int> depth(n + 1, -1), best;
    for (int start : adj[1]) {
        depth[1] = 0;
        depth[start] = 1;
        vector<int> order{start};
        int deepest = 1;
        for (size_t i = 0; i < order.size(); i++) {
            int v = order[i];
            deepest = max(deepest, depth[v]);
            for (int u : adj[v])
                if (depth[u] < 0) { depth[u] = depth[v] + 1; order.push_back(u); }
        }
        best.push_back(deepest);
    }
    sort(best.rbegin(), best.rend());
    printf("%d\n", best[0] + (best.size() > 1 ? best[1] : 0));
}
