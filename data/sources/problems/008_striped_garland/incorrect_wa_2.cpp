#include <bits/stdc++.h>
using namespace std;

int main() {
    int n;
    string s;
    cin >> n >> s;
    int diff = 0;
    for (int i = 0; i < n; i++)
        if (s[i] != "RG"[i % 2]) diff++;
    cout << diff << "\n";  // only tries the pattern that starts with R
}
