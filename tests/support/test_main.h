// tests/support/test_main.h
//
// What every test binary's main() does (tests/support/test_main.cc is the
// main() of the binaries below the op cases; tests/autodiff/support/
// op_case_main.cc, of those that hold op cases, adds the isa check's mode).
//
// The tests run under the spin wait policy unless DAGRAD_WAIT_POLICY says
// otherwise: under auto a busy machine would make the kernels use one
// thread, and the thread-count tests (and every multi-thread path) would
// test less, or fail, by the load of the moment.
//
// Every file a test writes under ::testing::TempDir() (NewTempDir, FreshDir,
// the CLI runs' outputs) lands in a directory of the process's own, which
// is removed when every test passed and kept, its path printed, when one
// failed: a thousand runs of the tests leave nothing in /tmp.
//
//   int main(int argc, char** argv) { return dagrad::testing::RunTests(argc, argv); }

#ifndef DAGRAD_TESTS_SUPPORT_TEST_MAIN_H_
#define DAGRAD_TESTS_SUPPORT_TEST_MAIN_H_

#include <functional>

#include "absl/status/status.h"

namespace dagrad::testing {

// UseSpinWaitPolicy sets DAGRAD_WAIT_POLICY=spin unless it is set.
void UseSpinWaitPolicy();

// RunTests is GoogleTest's main() under UseSpinWaitPolicy, with the tests'
// files in a directory of their own (above). `after_tests`, when given,
// runs after the tests and before that directory goes, and an error from it
// fails the run.
int RunTests(int argc, char** argv,
             const std::function<absl::Status()>& after_tests = nullptr);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_TEST_MAIN_H_
