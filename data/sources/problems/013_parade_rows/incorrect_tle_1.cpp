#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long a, b;
        scanf("%lld %lld", &a, &b);
        for (long long d = 0;; d++) {  // widen the search one day at a time
            if ((a + d) % b == 0 || (a - d > 0 && (a - d) % b == 0)) {
                printf("%lld\n", d);
                break;
            }
        }
    }
}
