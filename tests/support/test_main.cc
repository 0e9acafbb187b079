// main() of dagrad_tests: GoogleTest's, plus the mode in which the isa
// check (tests/support/isa_check.h) runs this binary at another CPU kernel
// level:
//
//   DAGRAD_CPU_ISA=baseline dagrad_tests --op_case_outputs=FILE --op_case=NAME
//
// writes the outputs of the op-case config test NAME to FILE and exits 0,
// or prints why not and exits 1.
//
// The tests run under the spin wait policy unless DAGRAD_WAIT_POLICY says
// otherwise: under auto a busy machine would make the kernels use one
// thread, and the thread-count tests (and every multi-thread path) would
// test less, or fail, by the load of the moment.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/isa_check.h"

namespace {

constexpr char kOutputsFlag[] = "--op_case_outputs=";
constexpr char kCaseFlag[] = "--op_case=";

// Flag returns the value of `--flag=value` in argv, or null.
const char* Flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return argv[i] + std::strlen(flag);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("DAGRAD_WAIT_POLICY", "spin", /*overwrite=*/0);
  if (const char* path = Flag(argc, argv, kOutputsFlag)) {
    const char* name = Flag(argc, argv, kCaseFlag);
    const absl::Status st = dagrad::testing::WriteCaseOutputs(name ? name : "", path);
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return st.ok() ? 0 : 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
