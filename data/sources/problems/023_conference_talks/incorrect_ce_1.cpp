#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<pair<int, int>> talks(n);
    for (auto &[s, e] : talks) scanf("%d %d", &s, &e);
    sort(talks.begin(), talks.end(), [](const pair<int, int> &a, const pair<int, int> &b) {
        return a.second < b.second
    });
    int freeFrom = 0, count = 0;
    for (auto [s, e] : talks)
        if (s >= freeFrom) { count++; freeFrom = e; }
    printf("%d\n", count);
}
