#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    string s;
    cin >> n >> s;
    vector<int> cnt(26, 0);
    for (char c : s) cnt.at(c - 'A')++;  // 'A' instead of 'a': the index is out of range
    int odd = 0;
    for (int x : cnt) odd += x % 2;
    cout << max(0, odd - 1) << "\n";
}
