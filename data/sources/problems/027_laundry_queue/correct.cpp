#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<pair<long long, long long>> b(n);
    for (auto &p : b) scanf("%lld %lld", &p.first, &p.second);
    sort(b.begin(), b.end(), [](const pair<long long, long long> &x, const pair<long long, long long> &y) {
        return x.first * y.second < y.first * x.second;
    });
    long long time = 0, total = 0;
    for (auto &p : b) {
        time += p.first;
        total += p.second * time;
    }
    printf("%lld\n", total);
}
