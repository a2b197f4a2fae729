#include <bits/stdc++.h>
using namespace std;

int main() {
    int r, c;
    scanf("%d %d", &r, &c);
    vector<string> g(r);
    char buf[300];
    int si = 0, sj = 0, ti = 0, tj = 0;
    for (int i = 0; i < r; i++) {
        scanf("%s", buf);
        g[i] = buf;
        for (int j = 0; j < c; j++) {
            if (g[i][j] == 'S') si = i, sj = j;
            if (g[i][j] == 'T') ti = i, tj = j;
        }
    }
    int DR[4] = {-1, 0, 1, 0}, DC[4] = {0, 1, 0, -1};
    // a cell is closed the first time it is popped, whatever direction the rover faced there
    vector<vector<char>> done(r, vector<char>(c, 0));
    deque<array<int, 4>> dq;
    for (int k = 0; k < 4; k++) dq.push_back({si, sj, k, 0});
    while (!dq.empty()) {
        auto [i, j, k, d] = dq.front();
        dq.pop_front();
        if (i == ti && j == tj) { printf("%d\n", d); return 0; }
        if (done[i][j]) continue;
        done[i][j] = 1;
        int ni = i + DR[k], nj = j + DC[k];
        if (ni >= 0 && ni < r && nj >= 0 && nj < c && g[ni][nj] != '#' && !done[ni][nj])
            dq.push_front({ni, nj, k, d});
        if (g[i][j] != '*') {
            for (int t : {1, 3}) dq.push_back({i, j, (k + t) & 3, d + 1});
        }
    }
    puts("-1");
}
