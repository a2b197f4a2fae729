#include <bits/stdc++.h>
using namespace std;

vector<int> parent_;

int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
}

int main() {
    int n, m;
    scanf("%d %d", &n, &m);
    parent_.resize(n + 1);
    iota(parent_.begin(), parent_.end(), 0);
    int components = n;
    for (int i = 0; i < m; i++) {
        int u, v;
        scanf("%d %d", &u, &v);
        int a = find(u), b = find(v);
        if (a != b) { parent_[a] = b; components--; }
    }
    printf("%d\n", components - 1);
}
