#include <bits/stdc++.h>
using namespace std;

int main() {
    int n, m;
    cin >> n >> m;
    vector<string> g(n);
    for (auto &row : g) cin >> row;
    vector<vector<bool>> seen(n, vector<bool>(m, false));
    queue<pair<int, int>> q;
    int answer = -1;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < m; c++)
            if (g[r][c] == 'S') { seen[r][c] = true; q.push({r, c, 0}); }
    int dr[] = {1, -1, 0, 0}, dc[] = {0, 0, 1, -1};
    while (!q.empty()) {
        auto [r, c, d] = q.front();
        q.pop();
        if (g[r][c] == 'E') { answer = d; break; }
        for (int k = 0; k < 4; k++) {
            int nr = r + dr[k], nc = c + dc[k];
            if (nr < 0 || nr >= n || nc < 0 || nc >= m || g[nr][nc] == '#' || seen[nr][nc]) continue;
            seen[nr][nc] = true;
            q.push({nr, nc, d + 1});
        }
    }
    cout << answer << "\n";
}
