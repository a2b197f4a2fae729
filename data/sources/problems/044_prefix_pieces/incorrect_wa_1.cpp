#include <bits/stdc++.h>
using namespace std;

int main() {
    const long long MOD = 998244353;
    string t, s;
    cin >> t >> s;
    int m = t.size(), n = s.size();
    string w = t + "#" + s;
    int L = w.size();
    vector<int> z(L, 0);
    z[0] = L;
    for (int i = 1, l = 0, r = 0; i < L; i++) {
        if (i < r) z[i] = min(r - i, z[i - l]);
        while (i + z[i] < L && w[z[i]] == w[i + z[i]]) z[i]++;
        if (i + z[i] > r) { l = i; r = i + z[i]; }
    }
    vector<int> reach(n);
    for (int i = 0; i < n; i++) reach[i] = z[m + 1 + i];
    // greedy: always stamp the longest prefix that fits
    int pieces = 0, pos = 0;
    while (pos < n) {
        if (reach[pos] == 0) { puts("-1 0"); return 0; }
        pos += reach[pos];
        pieces++;
    }
    vector<long long> diff(n + 2, 0);
    long long run = 0;
    for (int j = 0; j < n; j++) {
        run = ((run + diff[j]) % MOD + MOD) % MOD;
        long long ways = j == 0 ? 1 : run;
        if (ways && reach[j]) {
            diff[j + 1] = (diff[j + 1] + ways) % MOD;
            diff[j + reach[j] + 1] = (diff[j + reach[j] + 1] - ways + MOD) % MOD;
        }
    }
    run = (run + diff[n]) % MOD;
    printf("%d %lld\n", pieces, run);
}
