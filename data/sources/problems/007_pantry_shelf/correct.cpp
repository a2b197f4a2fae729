#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    long long W;
    scanf("%d %lld", &n, &W);
    vector<long long> w(n);
    for (auto &x : w) scanf("%lld", &x);
    sort(w.begin(), w.end());
    int count = 0;
    long long sum = 0;
    for (long long x : w) {
        if (sum + x > W) break;
        sum += x;
        count++;
    }
    printf("%d\n", count);
}
