#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int n;
ll cap, bestv = -1, bestw = 0;
vector<ll> W, V;

void go(int i, ll w, ll v) {  // tries all 2^n subsets
    if (w > cap) return;
    if (i == n) {
        if (v > bestv || (v == bestv && w < bestw)) { bestv = v; bestw = w; }
        return;
    }
    go(i + 1, w, v);
    go(i + 1, w + W[i], v + V[i]);
}

int main() {
    scanf("%d %lld", &n, &cap);
    W.resize(n);
    V.resize(n);
    for (int i = 0; i < n; i++) scanf("%lld %lld", &W[i], &V[i]);
    go(0, 0, 0);
    printf("%lld %lld\n", bestv, bestw);
}
