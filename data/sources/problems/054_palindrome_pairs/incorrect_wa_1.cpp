#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    static char buf[100005];
    scanf("%d %s", &n, buf);
    string s = buf;
    vector<int> len = {-1, 0}, link = {0, 0}, occ = {0, 0};
    vector<array<int, 26>> to(2);
    to[0].fill(0);
    to[1].fill(0);
    int last = 1;
    for (int i = 0; i < n; i++) {
        int c = s[i] - 'a';
        int v = last;
        while (true) {
            int j = i - len[v] - 1;
            if (j >= 0 && s[j] == s[i]) break;
            v = link[v];
        }
        if (!to[v][c]) {
            int u = len.size();
            len.push_back(len[v] + 2);
            occ.push_back(0);
            to.push_back({});
            to.back().fill(0);
            if (len[u] == 1) link.push_back(1);
            else {
                int w = link[v];
                while (true) {
                    int j = i - len[w] - 1;
                    if (j >= 0 && s[j] == s[i]) break;
                    w = link[w];
                }
                link.push_back(to[w][c]);
            }
            to[v][c] = u;
        }
        last = to[v][c];
        occ[last]++;
    }
    ll total = 0;
    for (int v = (int)len.size() - 1; v >= 2; v--) {
        total += occ[v] * (occ[v] - 1) / 2;  // int product overflows for frequent palindromes
        occ[link[v]] += occ[v];
    }
    printf("%lld\n", total);
}
