#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<pair<int, int>> talks(n);  // (end, start)
    for (auto &[e, s] : talks) scanf("%d %d", &s, &e);
    sort(talks.begin(), talks.end());
    int freeFrom = 0, count = 0;
    for (auto [e, s] : talks)
        if (s >= freeFrom) { count++; freeFrom = e; }
    printf("%d\n", count);
}
