#include <bits/stdc++.h>
using namespace std;

// Simulates the mine minute by minute, keeping every cell the miner could be in.
int main() {
    int n, m;
    long long k;
    scanf("%d %d %lld", &n, &m, &k);
    vector<string> g(n);
    static char buf[400];
    for (int i = 0; i < n; i++) { scanf("%s", buf); g[i] = buf; }
    vector<vector<char>> wet(n, vector<char>(m, 0)), can(n, vector<char>(m, 0));
    for (int r = 0; r < n; r++)
        for (int c = 0; c < m; c++) {
            if (g[r][c] == 'W') wet[r][c] = 1;
            if (g[r][c] == 'S') can[r][c] = 1;
        }
    int dr[4] = {1, -1, 0, 0}, dc[4] = {0, 0, 1, -1};
    for (long long t = 1;; t++) {
        vector<vector<char>> nxt = can;
        bool changed = false, reached = false;
        for (int r = 0; r < n; r++)
            for (int c = 0; c < m; c++) {
                if (!can[r][c]) continue;
                for (int d = 0; d < 4; d++) {
                    int rr = r + dr[d], cc = c + dc[d];
                    if (rr < 0 || rr >= n || cc < 0 || cc >= m) continue;
                    if (g[rr][cc] == '#' || wet[rr][cc] || nxt[rr][cc]) continue;
                    nxt[rr][cc] = 1;
                    changed = true;
                    if (g[rr][cc] == 'E') reached = true;
                }
            }
        if (reached) { printf("%lld\n", t); return 0; }
        if (!changed) { puts("-1"); return 0; }
        if (t % k == 0) {
            vector<vector<char>> w2 = wet;
            for (int r = 0; r < n; r++)
                for (int c = 0; c < m; c++) {
                    if (!wet[r][c]) continue;
                    for (int d = 0; d < 4; d++) {
                        int rr = r + dr[d], cc = c + dc[d];
                        if (rr >= 0 && rr < n && cc >= 0 && cc < m && g[rr][cc] != '#') w2[rr][cc] = 1;
                    }
                }
            wet = w2;
        }
        bool any = false;
        for (int r = 0; r < n; r++)
            for (int c = 0; c < m; c++) {
                if (wet[r][c]) nxt[r][c] = 0;
                any |= nxt[r][c];
            }
        if (!any) { puts("-1"); return 0; }
        can = nxt;
    }
}
