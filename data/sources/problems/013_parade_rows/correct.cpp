#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long a, b;
        scanf("%lld %lld", &a, &b);
        long long r = a % b;
        printf("%lld\n", a < b ? b - a : min(r, b - r));
    }
}
