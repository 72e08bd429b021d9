#include <cstdio>
int main() { std::puts("headwise"); return 0; }
