#include <bits/stdc++.h>
using namespace std;

int main() {
    static char buf[200005];
    scanf("%200000s", buf);
    string s(buf);
    int n = s.size();
    long long total = 0;
    for (int k = 1; k <= n; k++) {
        for (int p = 1; p <= k; p++) {
            bool ok = true;
            for (int j = p; j < k && ok; j++) ok = s[j] == s[j - p];
            if (ok) { total += p; break; }
        }
    }
    printf("%lld\n", total);
}
