#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    string s;
    cin >> n >> s;
    int pos = 0, count = 0;
    for (char c : s) {
        pos += c == 'R' ? 1 : -1;
        if (pos == 0) count++;
    }
    cout << count << "\n";
}
