#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    int cnt[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        int a;
        scanf("%d", &a);
        cnt[a % 3]++;
    }
    long long ans = cnt[0] * (cnt[0] - 1) / 2 + cnt[1] * cnt[2];  // the products are computed in int
    printf("%lld\n", ans);
}
