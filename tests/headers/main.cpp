// Linked with one translation unit per public header; building it is the test.
int main() { return 0; }
