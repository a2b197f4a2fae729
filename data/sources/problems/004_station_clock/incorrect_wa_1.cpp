#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        int h, m;
        long long k;
        scanf("%d:%d %lld", &h, &m, &k);
        long long total = (h * 60 + m + k % 1440) % 1440;
        printf("%lld:%lld\n", total / 60, total % 60);  // no leading zeros
    }
}
