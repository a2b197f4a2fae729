#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    long long M, H;
    cin >> n >> M >> H;
    vector<long long> c(n), d(n);
    for (int i = 0; i < n; i++) cin >> c[i] >> d[i];
    int count = 0;
    for (int mask = 1; mask < (1 << n); mask++) {
        long long sc = 0, sd = 0;
        for (int i = 0; i < n; i++)
            if (mask >> i & 1) { sc += c[i]; sd += d[i]; }
        if (sc <= M && sd >= H) count++;
    }
    cout << count << "\n";
}
