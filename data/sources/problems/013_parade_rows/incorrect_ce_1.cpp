#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        ll a, b;
        scanf("%lld %lld", &a, &b);
        ll r = a % b;
        printf("%lld\n", a < b ? b - a : min(r, b - r));
    }
}
