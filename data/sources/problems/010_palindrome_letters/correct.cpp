#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    string s;
    cin >> n >> s;
    int cnt[26] = {0};
    for (char c : s) cnt[c - 'a']++;
    int odd = 0;
    for (int x : cnt) odd += x % 2;
    cout << max(0, odd - 1) << "\n";
}
