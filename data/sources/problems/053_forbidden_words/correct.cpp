#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef unsigned long long ull;
const ll MOD = 998244353;
typedef vector<vector<ll>> Mat;

Mat mul(const Mat &A, const Mat &B) {
    int m = A.size();
    Mat C(m, vector<ll>(m, 0));
    for (int i = 0; i < m; i++)
        for (int l = 0; l < m; l++) {
            if (!A[i][l]) continue;
            for (int j = 0; j < m; j++) C[i][j] = (C[i][j] + A[i][l] * B[l][j]) % MOD;
        }
    return C;
}

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
        else { link[go[0][x]] = 0; q.push(go[0][x]); }
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
    vector<int> idx(S, -1);
    int m = 0;
    for (int v = 0; v < S; v++) if (!bad[v]) idx[v] = m++;
    Mat M(m, vector<ll>(m, 0));
    for (int v = 0; v < S; v++) {
        if (bad[v]) continue;
        for (int x = 0; x < c; x++) if (!bad[go[v][x]]) M[idx[v]][idx[go[v][x]]]++;
    }
    Mat R(m, vector<ll>(m, 0));
    for (int i = 0; i < m; i++) R[i][i] = 1;
    while (n) {
        if (n & 1) R = mul(R, M);
        M = mul(M, M);
        n >>= 1;
    }
    ll ans = 0;
    for (int j = 0; j < m; j++) ans = (ans + R[idx[0]][j]) % MOD;
    cout << ans << endl;
}
