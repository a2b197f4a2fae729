#include <bits/stdc++.h>
using namespace std;
const int MOD = 1000000007;

int main() {
    int h, w, k;
    scanf("%d %d %d", &h, &w, &k);
    set<pair<int, int>> bad;
    for (int i = 0; i < k; i++) {
        int r, c;
        scanf("%d %d", &r, &c);
        bad.insert({r, c});
    }
    // plain grid DP over every cell, remembering whether the shield is used
    vector<array<int, 2>> prev(w + 1, {0, 0}), cur(w + 1, {0, 0});
    for (int r = 1; r <= h; r++) {
        for (int c = 1; c <= w; c++) {
            array<int, 2> v;
            if (r == 1 && c == 1) v = {1, 0};
            else {
                v[0] = (prev[c][0] + cur[c - 1][0]) % MOD;
                v[1] = (prev[c][1] + cur[c - 1][1]) % MOD;
            }
            if (bad.count({r, c})) v = {0, v[0]};
            cur[c] = v;
        }
        swap(prev, cur);
        cur[0] = {0, 0};
    }
    printf("%d\n", (prev[w][0] + prev[w][1]) % MOD);
}
