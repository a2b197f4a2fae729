#include <bits/stdc++.h>
using namespace std;

int main() {
    int k;
    long long T;
    scanf("%d %lld", &k, &T);
    vector<int> coins(k);
    for (auto &c : coins) scanf("%d", &c);
    sort(coins.begin(), coins.end());
    coins.erase(unique(coins.begin(), coins.end()), coins.end());
    int m = coins[0];
    const int INF = INT_MAX;
    vector<int> dist(m, INF);  // smallest amounts fit in int ... do they?
    dist[0] = 0;
    priority_queue<pair<int, int>, vector<pair<int, int>>, greater<>> pq;
    pq.push({0, 0});
    while (!pq.empty()) {
        auto [d, r] = pq.top();
        pq.pop();
        if (d > dist[r]) continue;
        for (size_t i = 1; i < coins.size(); i++) {
            int nr = (r + coins[i]) % m;
            int nd = d + coins[i];
            if (nd < dist[nr]) {
                dist[nr] = nd;
                pq.push({nd, nr});
            }
        }
    }
    long long total = 0;
    for (int d : dist)
        if (d != INF && d <= T) total += (T - d) / m + 1;
    printf("%lld\n", total - 1);
}
