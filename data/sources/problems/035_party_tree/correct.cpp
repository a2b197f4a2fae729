#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    ll c;
    scanf("%d %lld", &n, &c);
    vector<ll> a(n + 1);
    for (int i = 1; i <= n; i++) scanf("%lld", &a[i]);
    vector<vector<int>> ch(n + 1);
    for (int i = 2; i <= n; i++) {
        int b;
        scanf("%d", &b);
        ch[b].push_back(i);
    }
    vector<int> order = {1};
    for (size_t h = 0; h < order.size(); h++)
        for (int u : ch[order[h]]) order.push_back(u);
    vector<ll> out(n + 1, 0), in(n + 1, 0);
    for (int h = n - 1; h >= 0; h--) {
        int v = order[h];
        ll skip = 0, take = a[v];
        for (int u : ch[v]) {
            skip += max(out[u], in[u]);
            take += max(out[u], in[u] - c);
        }
        out[v] = skip;
        in[v] = take;
    }
    printf("%lld\n", max(out[1], in[1]));
}
