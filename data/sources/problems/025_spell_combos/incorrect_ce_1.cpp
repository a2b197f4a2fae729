#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    long long M, H;
    cin >> n >> M >> H;
    vector<pair<long long, long long>> spell(n);
    for (auto &s : spell) cin >> s;
    int count = 0;
    for (int mask = 1; mask < (1 << n); mask++) {
        long long sc = 0, sd = 0;
        for (int i = 0; i < n; i++)
            if (mask >> i & 1) { sc += spell[i].first; sd += spell[i].second; }
        if (sc <= M && sd >= H) count++;
    }
    cout << count << "\n";
}
