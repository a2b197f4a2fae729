#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long l, r, total = 0;
        scanf("%lld %lld", &l, &r);
        for (long long x = l; x <= r; x++) total += __builtin_popcountll(x);
        printf("%lld\n", total);
    }
}
