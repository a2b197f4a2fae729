#include <bits/stdc++.h>
using namespace std;

int main() {
    string s;
    cin >> s;
    long long sum = 0;
    for (char c : s) sum += c - '0';
    int r = sum % 9;
    cout << (r ? r : 9) << "\n";
}
