#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, q;
    scanf("%d %d", &n, &q);
    static char s[50005];
    scanf("%s", s);
    vector<array<int, 26>> pre(n + 1);
    pre[0].fill(0);
    for (int i = 1; i <= n; i++) {
        pre[i] = pre[i - 1];
        pre[i][s[i - 1] - 'a']++;
    }
    while (q--) {
        int l, r;
        char c;
        scanf("%d %d %c", &l, &r, &c);
        printf("%d\n", pre[r][c - 'a'] - pre[l - 1][c - 'a']);
    }
}
