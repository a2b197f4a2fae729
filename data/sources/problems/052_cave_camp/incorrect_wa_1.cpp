#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    static char buf[200005];
    string walk;
    if (scanf("%s", buf) == 1) walk = buf;
    vector<int> parent(n, -1), stk = {0};
    int nxt = 1;
    for (char ch : walk) {
        if (ch == 'D') { parent[nxt] = stk.back(); stk.push_back(nxt); nxt++; }
        else stk.pop_back();
    }
    // sums of squared distances stored in int
    vector<int> sz(n, 1), d1(n, 0), d2(n, 0);
    for (int v = n - 1; v > 0; v--) {
        int p = parent[v];
        sz[p] += sz[v];
        d1[p] += d1[v] + sz[v];
        d2[p] += d2[v] + 2 * d1[v] + sz[v];
    }
    vector<int> f1(n), f2(n);
    f1[0] = d1[0];
    f2[0] = d2[0];
    for (int c = 1; c < n; c++) {
        int v = parent[c];
        int out1 = f1[v] - d1[c] - sz[c];
        int out2 = f2[v] - d2[c] - 2 * d1[c] - sz[c];
        int rest = n - sz[c];
        f1[c] = d1[c] + out1 + rest;
        f2[c] = d2[c] + out2 + 2 * out1 + rest;
    }
    int best = *min_element(f2.begin(), f2.end());
    printf("%d %d\n", best, (int)count(f2.begin(), f2.end(), best));
}
