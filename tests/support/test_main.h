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
//   int main(int argc, char** argv) { return dagrad::testing::RunTests(argc, argv); }

#ifndef DAGRAD_TESTS_SUPPORT_TEST_MAIN_H_
#define DAGRAD_TESTS_SUPPORT_TEST_MAIN_H_

namespace dagrad::testing {

// UseSpinWaitPolicy sets DAGRAD_WAIT_POLICY=spin unless it is set.
void UseSpinWaitPolicy();

// RunTests is GoogleTest's main() under UseSpinWaitPolicy.
int RunTests(int argc, char** argv);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_TEST_MAIN_H_
