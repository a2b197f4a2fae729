#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
const ll MOD = 998244353;

int main() {
    ll n;
    int c, k;
    cin >> n >> c >> k;
    vector<array<int, 26>> go(1);
    go[0].fill(-1);
    vector<char> bad(1, 0);
    for (int i = 0; i < k; i++) {
        string w;
        cin >> w;
        int v = 0;
        for (char ch : w) {
            int x = ch - 'a';
            if (go[v][x] == -1) {
                go[v][x] = go.size();
                go.push_back({});
                go.back().fill(-1);
                bad.push_back(0);
            }
            v = go[v][x];
        }
        bad[v] = 1;
    }
    int S = go.size();
    vector<int> link(S, 0);
    queue<int> q;
    for (int x = 0; x < c; x++) {
        if (go[0][x] == -1) go[0][x] = 0;
        else q.push(go[0][x]);
    }
    while (!q.empty()) {
        int v = q.front(); q.pop();
        bad[v] |= bad[link[v]];
        for (int x = 0; x < c; x++) {
            int u = go[v][x];
            if (u == -1) go[v][x] = go[link[v]][x];
            else { link[u] = go[link[v]][x]; q.push(u); }
        }
    }
    // letter-by-letter DP over the automaton: linear in n
    vector<ll> dp(S, 0), nd(S);
    dp[0] = 1;
    for (ll step = 0; step < n; step++) {
        fill(nd.begin(), nd.end(), 0);
        for (int v = 0; v < S; v++) {
            if (!dp[v] || bad[v]) continue;
            for (int x = 0; x < c; x++) {
                int u = go[v][x];
                if (!bad[u]) nd[u] = (nd[u] + dp[v]) % MOD;
            }
        }
        swap(dp, nd);
    }
    ll ans = 0;
    for (int v = 0; v < S; v++) ans = (ans + dp[v]) % MOD;
    cout << ans << endl;
}
