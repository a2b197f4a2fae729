#include <bits/stdc++.h>
using namespace std;
typedef long long ll;
typedef vector<vector<ll>> Mat;
const ll MOD = 1000000007LL;

Mat mul(const Mat &X, const Mat &Y) {
    int k = X.size();
    Mat Z(k, vector<ll>(k, 0));
    for (int i = 0; i < k; i++)
        for (int l = 0; l < k; l++) {
            if (!X[i][l]) continue;
            for (int j = 0; j < k; j++) Z[i][j] = (Z[i][j] + X[i][l] * Y[l][j]) % MOD;
        }
    return Z;
}

ll tracePower(Mat M, ll n) {
    int k = M.size();
    if (k == 0) return 0;
    Mat R(k, vector<ll>(k, 0));
    for (int i = 0; i < k; i++) R[i][i] = 1;
    while (n) {
        if (n & 1) R = mul(R, M);
        M = mul(M, M);
        n >>= 1;
    }
    ll t = 0;
    for (int i = 0; i < k; i++) t = (t + R[i][i]) % MOD;
    return t;
}

int main() {
    ll n;
    int m, s;
    cin >> n >> m >> s;
    vector<int> sig(s);
    for (auto &x : sig) { cin >> x; x--; }
    vector<string> rows(m);
    for (auto &r : rows) cin >> r;
    ll ans = 0;
    for (int mask = 0; mask < (1 << s); mask++) {
        vector<bool> removed(m, false);
        for (int i = 0; i < s; i++) if (mask >> i & 1) removed[sig[i]] = true;
        vector<int> keep;
        for (int i = 0; i < m; i++) if (!removed[i]) keep.push_back(i);
        Mat B(keep.size(), vector<ll>(keep.size()));
        for (size_t i = 0; i < keep.size(); i++)
            for (size_t j = 0; j < keep.size(); j++) B[i][j] = rows[keep[i]][keep[j]] - '0';
        ll tr = tracePower(B, n);
        if (__builtin_popcount(mask) & 1) ans = (ans - tr + MOD) % MOD;
        else ans = (ans + tr) % MOD;
    }
    cout << ans << endl;
}
