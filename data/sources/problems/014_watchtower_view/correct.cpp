#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long n, r, c;
        scanf("%lld %lld %lld", &n, &r, &c);
        long long diag = min(r - 1, c - 1) + min(n - r, n - c) + min(r - 1, n - c) + min(n - r, c - 1);
        printf("%lld\n", 2 * (n - 1) + diag);
    }
}
