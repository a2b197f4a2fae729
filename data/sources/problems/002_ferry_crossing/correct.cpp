#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long n, k;
        scanf("%lld %lld", &n, &k);
        long long trips = (n + k - 1) / k;
        printf("%lld\n", 2 * trips - 1);
    }
}
