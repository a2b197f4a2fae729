#include <bits/stdc++.h>
using namespace std;

int main() {
    static char buf[200005];
    scanf("%200000s", buf);
    string s(buf);
    int n = s.size();
    int total = 0;
    vector<int> d1(n), d2(n);
    for (int i = 0, l = 0, r = -1; i < n; i++) {
        int k = i > r ? 1 : min(d1[l + r - i], r - i + 1);
        while (i - k >= 0 && i + k < n && s[i - k] == s[i + k]) k++;
        d1[i] = k;
        total += k;
        if (i + k - 1 > r) { l = i - k + 1; r = i + k - 1; }
    }
    for (int i = 0, l = 0, r = -1; i < n; i++) {
        int k = i > r ? 0 : min(d2[l + r - i + 1], r - i + 1);
        while (i - k - 1 >= 0 && i + k < n && s[i - k - 1] == s[i + k]) k++;
        d2[i] = k;
        total += k;
        if (i + k - 1 > r) { l = i - k; r = i + k - 1; }
    }
    printf("%d\n", total);
}
