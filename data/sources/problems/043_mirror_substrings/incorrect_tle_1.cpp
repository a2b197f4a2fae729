#include <bits/stdc++.h>
using namespace std;

int main() {
    static char buf[200005];
    scanf("%200000s", buf);
    string s(buf);
    int n = s.size();
    long long total = 0;
    for (int c = 0; c < n; c++) {  // grow a palindrome around every centre
        for (int l = c, r = c; l >= 0 && r < n && s[l] == s[r]; l--, r++) total++;
        for (int l = c - 1, r = c; l >= 0 && r < n && s[l] == s[r]; l--, r++) total++;
    }
    printf("%lld\n", total);
}
