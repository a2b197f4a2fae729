#include <bits/stdc++.h>
using namespace std;
typedef unsigned long long ull;

// sum of floor((a * x + b) / m) for x = 0 .. n - 1
ull floor_sum(ull n, ull m, ull a, ull b) {
    ull ans = 0;
    while (true) {
        if (a >= m) { ans += n * (n - 1) / 2 * (a / m); a %= m; }
        if (b >= m) { ans += n * (b / m); b %= m; }
        ull y = a * n + b;
        if (y < m) break;
        n = y / m;
        b = y % m;
        swap(m, a);
    }
    return ans;
}

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        ull n, m, a, b, c;
        scanf("%llu %llu %llu %llu %llu", &n, &m, &a, &b, &c);
        ull dark = floor_sum(n, m, a, b + m - c) - floor_sum(n, m, a, b);
        printf("%llu\n", n - dark);
    }
}
