#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    scanf("%d", &n);
    vector<int> t(n), wait(n, 0);
    stack<int> st;
    for (auto &x : t) scanf("%d", &x);
    for (int i = 0; i < n; i++) {
        while (!st.empty() && t[st.back()] < t[i]) {
            wait[st.back()] = i - st.back();
            st.pop();
        }
        st.push(i);
    }
    for (int i = 0; i < n; i++) printf("%d%c", wait[i], i + 1 == n ? '\n' : ' ');
}
