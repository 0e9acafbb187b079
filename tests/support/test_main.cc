// main() of the test binaries that hold no op case (tests/support/test_main.h).

#include "tests/support/test_main.h"

int main(int argc, char** argv) { return dagrad::testing::RunTests(argc, argv); }
