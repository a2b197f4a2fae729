#include <bits/stdc++.h>
using namespace std;
typedef unsigned long long ull;

int main() {
    int n, q;
    scanf("%d %d", &n, &q);
    ull basis[60] = {0};
    for (int i = 0; i < n; i++) {
        ull x;
        scanf("%llu", &x);
        for (int b = 59; b >= 0 && x; b--) {
            if (!(x >> b & 1)) continue;
            if (basis[b]) x ^= basis[b];
            else { basis[b] = x; break; }
        }
    }
    for (int b = 0; b < 60; b++)
        if (basis[b])
            for (int c = b + 1; c < 60; c++)
                if (basis[c] >> b & 1) basis[c] ^= basis[b];
    vector<ull> vecs;
    for (int b = 0; b < 60; b++) if (basis[b]) vecs.push_back(basis[b]);
    int shift = n - (int)vecs.size();
    while (q--) {
        ull k;
        scanf("%llu", &k);
        k--;
        ull idx = shift < 64 ? k >> shift : 0;
        ull val = 0;
        for (int i = 0; idx; i++, idx >>= 1)
            if (idx & 1) val ^= vecs[i];
        printf("%llu\n", val);
    }
}
