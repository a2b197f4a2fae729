#include <bits/stdc++.h>
using namespace std;

int main() {
    static char buf[200005];
    scanf("%200000s", buf);
    string s(buf);
    int n = s.size();
    vector<int> pi(n, 0);
    long long total = 1;
    for (int i = 1, k = 0; i < n; i++) {
        while (k && s[k] != s[i]) k = pi[k - 1];
        if (s[k] == s[i]) k++;
        pi[i] = k;
        total += i + 1 - k;
    }
    printf("%lld\n", total);
}
