#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        long long n, m, a, b, c;
        scanf("%lld %lld %lld %lld %lld", &n, &m, &a, &b, &c);
        long long cnt = 0, dir = b;
        for (long long x = 0; x < n; x++) {  // second by second
            if (dir < c) cnt++;
            dir += a;
            if (dir >= m) dir -= m;
        }
        printf("%lld\n", cnt);
    }
}
