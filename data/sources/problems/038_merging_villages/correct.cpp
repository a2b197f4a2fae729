#include <bits/stdc++.h>
using namespace std;

vector<int> par, sz, nxt;

int find(int x) {
    while (par[x] != x) { par[x] = par[par[x]]; x = par[x]; }
    return x;
}

void unite(int a, int b) {
    a = find(a); b = find(b);
    if (a == b) return;
    if (sz[a] < sz[b]) swap(a, b);
    par[b] = a;
    sz[a] += sz[b];
}

int next_free(int i) {
    int root = i;
    while (nxt[root] != root) root = nxt[root];
    while (nxt[i] != root) { int t = nxt[i]; nxt[i] = root; i = t; }
    return root;
}

int main() {
    int n, q;
    scanf("%d %d", &n, &q);
    par.resize(n + 2); sz.assign(n + 2, 1); nxt.resize(n + 2);
    iota(par.begin(), par.end(), 0);
    iota(nxt.begin(), nxt.end(), 0);
    while (q--) {
        int t, a, b;
        scanf("%d %d", &t, &a);
        if (t == 3) { printf("%d\n", sz[find(a)]); continue; }
        scanf("%d", &b);
        if (t == 1) unite(a, b);
        else
            for (int i = next_free(a); i < b; i = next_free(i + 1)) {
                unite(i, i + 1);
                nxt[i] = i + 1;
            }
    }
}
