#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    long long M, H;
    cin >> n >> M >> H;
    vector<int> c(n), d(n);
    for (int i = 0; i < n; i++) cin >> c[i] >> d[i];
    int count = 0;
    for (int mask = 1; mask < (1 << n); mask++) {
        int sc = 0, sd = 0;  // sums of up to 15 values of 10^9 overflow int
        for (int i = 0; i < n; i++)
            if (mask >> i & 1) { sc += c[i]; sd += d[i]; }
        if (sc <= M && sd >= H) count++;
    }
    cout << count << "\n";
}
