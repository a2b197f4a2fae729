#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    string s;
    cin >> n >> s;
    int pos = 0, count = 0;
    for (char c : s) {
        if (c == 'R') pos++;
        else {
            pos--;
            if (pos == 0) count++;  // only notices returns coming from the right side
        }
    }
    cout << count << "\n";
}
