// main() of the test binaries that hold op cases (dagrad_autodiff_tests,
// dagrad_models_tests): tests/support/test_main.h's, plus the mode in which
// the isa check (tests/autodiff/support/isa_check.h) runs the binary at
// another CPU kernel level:
//
//   DAGRAD_CPU_ISA=baseline dagrad_autodiff_tests --op_case_server
//
// serves op-case outputs until its stdin ends. After the tests, the
// children the isa check started are stopped, and one that did not exit
// cleanly fails the run.

#include <cstring>

#include "tests/autodiff/support/isa_check.h"
#include "tests/support/test_main.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--op_case_server") == 0) {
    dagrad::testing::UseSpinWaitPolicy();
    return dagrad::testing::ServeCaseOutputs();
  }
  return dagrad::testing::RunTests(argc, argv, dagrad::testing::StopIsaChildren);
}
