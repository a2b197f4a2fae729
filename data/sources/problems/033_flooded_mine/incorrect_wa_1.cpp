#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, m;
    int k;
    scanf("%d %d %d", &n, &m, &k);
    vector<string> g(n);
    static char buf[400];
    for (int i = 0; i < n; i++) { scanf("%s", buf); g[i] = buf; }
    const int INF = INT_MAX;
    vector<int> water(n * m, INF);
    vector<int> dist(n * m, -1), q;
    q.reserve(n * m);
    int start = -1, ex = -1;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < m; c++) {
            int i = r * m + c;
            if (g[r][c] == 'W') { water[i] = 0; q.push_back(i); }
            if (g[r][c] == 'S') start = i;
            if (g[r][c] == 'E') ex = i;
        }
    int dr[4] = {1, -1, 0, 0}, dc[4] = {0, 0, 1, -1};
    for (size_t h = 0; h < q.size(); h++) {
        int u = q[h], r = u / m, c = u % m;
        for (int d = 0; d < 4; d++) {
            int rr = r + dr[d], cc = c + dc[d];
            if (rr < 0 || rr >= n || cc < 0 || cc >= m || g[rr][cc] == '#') continue;
            int v = rr * m + cc;
            if (water[v] == INF) { water[v] = water[u] + 1; q.push_back(v); }
        }
    }
    q.clear();
    dist[start] = 0;
    q.push_back(start);
    for (size_t h = 0; h < q.size(); h++) {
        int u = q[h], r = u / m, c = u % m;
        long long t = dist[u] + 1;
        for (int d = 0; d < 4; d++) {
            int rr = r + dr[d], cc = c + dc[d];
            if (rr < 0 || rr >= n || cc < 0 || cc >= m || g[rr][cc] == '#') continue;
            int v = rr * m + cc;
            if (dist[v] != -1) continue;
            int flood = water[v] == INF ? INF : water[v] * k;  // end of the minute it floods
            if (v == ex) {
                if (flood >= t) { printf("%lld\n", t); return 0; }
                continue;
            }
            if (flood > t) { dist[v] = t; q.push_back(v); }
        }
    }
    puts("-1");
}
