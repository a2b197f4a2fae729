#include <bits/stdc++.h>
using namespace std;
typedef long long ll;

int main() {
    int n;
    static char buf[100005];
    scanf("%d %s", &n, buf);
    string s = buf;
    // expand around every centre and count each palindrome occurrence in a map
    map<string, ll> cnt;
    for (int c = 0; c < 2 * n - 1; c++) {
        int l = c / 2, r = (c + 1) / 2;
        while (l >= 0 && r < n && s[l] == s[r]) {
            cnt[s.substr(l, r - l + 1)]++;
            l--;
            r++;
        }
    }
    ll total = 0;
    for (auto &p : cnt) total += p.second * (p.second - 1) / 2;
    printf("%lld\n", total);
}
