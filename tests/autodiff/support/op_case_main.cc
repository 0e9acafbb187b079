// main() of the test binaries that hold op cases (dagrad_autodiff_tests,
// dagrad_models_tests): tests/support/test_main.h's, plus the mode in which
// the isa check (tests/autodiff/support/isa_check.h) runs the binary at
// another CPU kernel level:
//
//   DAGRAD_CPU_ISA=baseline dagrad_autodiff_tests --op_case_outputs=FILE --op_case=NAME
//
// writes the outputs of the op-case config test NAME to FILE and exits 0,
// or prints why not and exits 1.

#include <cstdio>
#include <cstring>
#include <string>

#include "tests/autodiff/support/isa_check.h"
#include "tests/support/test_main.h"

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
  if (const char* path = Flag(argc, argv, kOutputsFlag)) {
    dagrad::testing::UseSpinWaitPolicy();
    const char* name = Flag(argc, argv, kCaseFlag);
    const absl::Status st = dagrad::testing::WriteCaseOutputs(name ? name : "", path);
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return st.ok() ? 0 : 1;
  }
  return dagrad::testing::RunTests(argc, argv);
}
