#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    scanf("%d", &n);
    vector<ll> r(n), m(n);
    int slow = 0;
    for (int i = 0; i < n; i++) {
        scanf("%lld %lld", &r[i], &m[i]);
        if (m[i] > m[slow]) slow = i;
    }
    // check the first ten million flashes of the slowest beacon; surely that is enough
    ll t = r[slow];
    for (int it = 0; it < 10000000; it++, t += m[slow]) {
        bool ok = true;
        for (int i = 0; i < n && ok; i++) ok = t % m[i] == r[i];
        if (ok) { printf("%lld\n", t); return 0; }
    }
    puts("-1");
}
