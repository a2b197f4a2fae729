#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    long long W;
    scanf("%d %lld", &n, &W);
    vector<int> w(n);
    for (auto &x : w) scanf("%d", &x);
    sort(w.begin(), w.end());
    int count = 0, sum = 0;  // the running sum overflows int
    for (int x : w) {
        if (sum + x > W) break;
        sum += x;
        count++;
    }
    printf("%d\n", count);
}
