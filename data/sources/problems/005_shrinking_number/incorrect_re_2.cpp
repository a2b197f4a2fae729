#include <bits/stdc++.h>
using namespace std;

int main() {
    string s;
    cin >> s;
    long long x = stoll(s);  // throws out_of_range once the number has 20 digits
    while (x >= 10) {
        long long t = 0;
        while (x) { t += x % 10; x /= 10; }
        x = t;
    }
    cout << x << "\n";
}
