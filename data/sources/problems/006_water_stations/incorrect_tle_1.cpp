#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long l, r, k;
        scanf("%lld %lld %lld", &l, &r, &k);
        long long count = 0;
        for (long long x = l; x <= r; x++)
            if (x % k == 0) count++;
        printf("%lld\n", count);
    }
}
