#include <bits/stdc++.h>
using namespace std;
typedef unsigned long long ull;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        ull n, p;
        int e;
        scanf("%llu %llu %d", &n, &p, &e);
        vector<ull> digits;
        while (n) { digits.push_back(n % p); n /= p; }
        if (e >= (int)digits.size()) { puts("0"); continue; }
        vector<ull> a0(e + 1, 0), a1(e + 1, 0), n0(e + 1), n1(e + 1);
        a0[0] = 1;
        for (ull d : digits) {
            for (int j = 0; j <= e; j++) {
                n0[j] = (d + 1) * a0[j] + d * a1[j];
                // with an incoming carry the digit of k has one more option ... forgotten
                n1[j] = j == 0 ? 0 : (p - 1 - d) * (a0[j - 1] + a1[j - 1]);
            }
            swap(a0, n0);
            swap(a1, n1);
        }
        printf("%llu\n", a0[e]);
    }
}
