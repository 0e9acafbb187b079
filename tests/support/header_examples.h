// The examples of the public headers' doc comments run as tests: the build
// extracts them (tools/header_examples/extract.py says what counts as an
// example) into one generated source per layer, each example the body of a
// struct deriving from its setup (tests/<layer>/support/header_example_setups.h),
// whose members (a graph `g`, inputs, an executor, files on disk) it uses:
//
//   struct ops_gather_34 : Default {
//     static constexpr const char* kWhere = "ops/gather.h:34";
//     absl::Status Run() {
//   #line 34 "ops/gather.h"
//       Value y = Gather(x, idx, 1);                   // the example
//       return Finish();                               // the graph's status
//     }
//   };
//   TEST(HeaderExample, ops_gather_34) { RunHeaderExample<ops_gather_34>(); }
//
// A setup is a struct with Prepare() (what it must do before the example
// and may fail at: writing a file) and Finish() (the status the example
// leaves: its graph's first error), both absl::Status.

#ifndef DAGRAD_TESTS_HEADER_EXAMPLES_H_
#define DAGRAD_TESTS_HEADER_EXAMPLES_H_

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace dagrad::examples {

// A setup with nothing in scope: examples that declare what they use.
struct NoSetup {
  absl::Status Prepare() { return absl::OkStatus(); }
  absl::Status Finish() { return absl::OkStatus(); }
};

// Runs the example Example (a setup's subclass with Run() and kWhere, its
// header and line) in a fresh temporary directory, as the files it writes
// are named relative to it: fails when Prepare(), Run() or Finish() return
// an error, and skips on Unavailable (what the machine lacks, a GPU or
// Graphviz, rather than an error of the example).
template <typename Example>
void RunHeaderExample() {
  char dir[] = "/tmp/dagrad_header_example_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ASSERT_EQ(chdir(dir), 0);
  absl::Status status;
  {
    Example example;
    status = example.Prepare();
    if (status.ok()) status = example.Run();
  }
  ASSERT_EQ(chdir("/"), 0);
  ASSERT_EQ(std::system(("rm -rf '" + std::string(dir) + "'").c_str()), 0);
  if (absl::IsUnavailable(status)) GTEST_SKIP() << Example::kWhere << ": " << status;
  EXPECT_TRUE(status.ok()) << Example::kWhere << ": " << status;
}

}  // namespace dagrad::examples

#endif  // DAGRAD_TESTS_HEADER_EXAMPLES_H_
