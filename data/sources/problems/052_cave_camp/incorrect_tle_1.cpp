#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    scanf("%d", &n);
    static char buf[200005];
    string walk;
    if (scanf("%s", buf) == 1) walk = buf;
    vector<vector<int>> adj(n);
    vector<int> stk = {0};
    int nxt = 1;
    for (char ch : walk) {
        if (ch == 'D') {
            adj[stk.back()].push_back(nxt);
            adj[nxt].push_back(stk.back());
            stk.push_back(nxt++);
        } else stk.pop_back();
    }
    ll best = LLONG_MAX;
    int cnt = 0;
    vector<int> dist(n), q(n);
    for (int r = 0; r < n; r++) {  // one BFS per candidate camp
        fill(dist.begin(), dist.end(), -1);
        int head = 0, tail = 0;
        q[tail++] = r;
        dist[r] = 0;
        ll e = 0;
        while (head < tail) {
            int u = q[head++];
            e += (ll)dist[u] * dist[u];
            for (int x : adj[u])
                if (dist[x] < 0) { dist[x] = dist[u] + 1; q[tail++] = x; }
        }
        if (e < best) { best = e; cnt = 1; }
        else if (e == best) cnt++;
    }
    printf("%lld %d\n", best, cnt);
}
