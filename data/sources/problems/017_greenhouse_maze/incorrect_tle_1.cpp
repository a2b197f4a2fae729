#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, m;
    cin >> n >> m;
    vector<string> g(n);
    for (auto &row : g) cin >> row;
    const int INF = INT_MAX / 2;
    vector<vector<int>> dist(n, vector<int>(m, INF));
    int er = 0, ec = 0;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < m; c++) {
            if (g[r][c] == 'S') dist[r][c] = 0;
            if (g[r][c] == 'E') { er = r; ec = c; }
        }
    int dr[] = {1, -1, 0, 0}, dc[] = {0, 0, 1, -1};
    bool changed = true;
    while (changed) {  // relax every tile again and again until nothing improves
        changed = false;
        for (int r = 0; r < n; r++)
            for (int c = 0; c < m; c++) {
                if (g[r][c] == '#') continue;
                for (int k = 0; k < 4; k++) {
                    int nr = r + dr[k], nc = c + dc[k];
                    if (nr < 0 || nr >= n || nc < 0 || nc >= m || g[nr][nc] == '#') continue;
                    if (dist[nr][nc] + 1 < dist[r][c]) { dist[r][c] = dist[nr][nc] + 1; changed = true; }
                }
            }
    }
    cout << (dist[er][ec] == INF ? -1 : dist[er][ec]) << "\n";
}
