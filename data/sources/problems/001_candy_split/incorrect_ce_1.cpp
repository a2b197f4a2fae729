#include <bits/stdc++.h>
using namespace std;

int main() {
    long long t
    cin >> t;
    while (t--) { long long n; cin >> n; cout << (n % 2 == 0 && n > 2 ? "YES" : "NO") << '\n'; }
}
