#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<pair<long long, long long>> v(n);  // (deadline, time)
    for (auto &p : v) scanf("%lld %lld", &p.second, &p.first);
    sort(v.begin(), v.end());
    priority_queue<long long> pq;
    long long total = 0;
    for (auto &p : v) {
        pq.push(p.second);
        total += p.second;
        if (total > p.first) {
            total -= pq.top();
            pq.pop();
        }
    }
    printf("%d\n", (int)pq.size());
}
