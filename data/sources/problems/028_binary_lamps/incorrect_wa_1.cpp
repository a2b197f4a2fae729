#include <bits/stdc++.h>
using namespace std;

long long ones_upto(long long n) {
    if (n < 0) return 0;
    long long total = 0, m = n + 1;
    for (int b = 0; b < 62 && (1LL << b) <= n; b++) {
        long long block = 1 << (b + 1), half = 1 << b;  // int shifts: wrong from bit 31 on
        total += (m / block) * half + max(0LL, m % block - half);
    }
    return total;
}

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long l, r;
        scanf("%lld %lld", &l, &r);
        printf("%lld\n", ones_upto(r) - ones_upto(l - 1));
    }
}
