#include <bits/stdc++.h>
using namespace std;

int main() {
    int r, c;
    scanf("%d %d", &r, &c);
    int W = c + 2;
    vector<char> g((r + 2) * W, 0);
    int start = -1, target = -1;
    char buf[300];
    for (int i = 0; i < r; i++) {
        scanf("%s", buf);
        for (int j = 0; j < c; j++) {
            int id = (i + 1) * W + j + 1;
            char ch = buf[j];
            if (ch == '#') continue;
            g[id] = ch == '*' ? 2 : 1;
            if (ch == 'S') start = id;
            if (ch == 'T') target = id;
        }
    }
    int delta[4] = {-W, 1, W, -1};
    vector<int> dist(4 * g.size(), -1);
    deque<int> dq;
    for (int k = 0; k < 4; k++) { dist[start * 4 + k] = 0; dq.push_back(start * 4 + k); }
    while (!dq.empty()) {
        int st = dq.front(); dq.pop_front();
        int cell = st >> 2, k = st & 3, d = dist[st];
        if (cell == target) { printf("%d\n", d); return 0; }
        int nc = cell + delta[k];
        if (g[nc]) {
            int ns = nc * 4 + k;
            if (dist[ns] == -1 || dist[ns] > d) { dist[ns] = d; dq.push_front(ns); }
        }
        if (g[cell] == 1) {
            for (int t : {1, 3}) {
                int ns = cell * 4 + ((k + t) & 3);
                if (dist[ns] == -1 || dist[ns] > d + 1) { dist[ns] = d + 1; dq.push_back(ns); }
            }
        }
    }
    puts("-1");
}
