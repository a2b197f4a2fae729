#include <bits/stdc++.h>
using namespace std;

int main() {
    int t;
    scanf("%d", &t);
    while (t--) {
        int n, r, c;
        scanf("%d %d %d", &n, &r, &c);
        int diag = min(r - 1, c - 1) + min(n - r, n - c) + min(r - 1, n - c) + min(n - r, c - 1);
        printf("%d\n", 2 * (n - 1) + diag);  // can exceed the range of int
    }
}
