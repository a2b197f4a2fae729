#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<pair<int, int>> talks(n);
    for (auto &[e, s] : talks) scanf("%d %d", &s, &e);
    sort(talks.begin(), talks.end());
    int lastEnd = -1, count = 0;
    for (auto [e, s] : talks)
        if (s > lastEnd) { count++; lastEnd = e; }  // treats touching talks as overlapping
    printf("%d\n", count);
}
