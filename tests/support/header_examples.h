// The header examples tests (tests/*/header_examples_*_test.cc) hold every
// example of the public headers' doc comments, line for line, inside a
// function that declares what the example uses, and run them.
// tools/lint/header_examples.py (ctest: header_examples) fails when a
// header's example is not copied there, so an example that stops compiling
// or running fails the build or this suite.
//
//   HEADER_EXAMPLE(OpsGather) {
//     Graph g;                                       // what the example uses
//     Value x = g.Input("x", DType::kFloat32, {4, 5, 6});   // the example
//     return absl::OkStatus();
//   }
//
// Each example runs in a fresh temporary directory, as the files it writes
// are named relative to it.

#ifndef DAGRAD_TESTS_HEADER_EXAMPLES_H_
#define DAGRAD_TESTS_HEADER_EXAMPLES_H_

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace dagrad {

class HeaderExample : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/dagrad_header_example_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    ASSERT_EQ(chdir(dir), 0);
  }
  void TearDown() override {
    ASSERT_EQ(chdir("/"), 0);
    ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0);
  }

 private:
  std::string dir_;
};

}  // namespace dagrad

// HEADER_EXAMPLE(Name) { ...; return absl::OkStatus(); } defines the test
// HeaderExample.Name, which fails when the body returns an error, and is
// skipped when it returns Unavailable: what a machine lacks (a GPU,
// Graphviz) rather than an error of the example.
#define HEADER_EXAMPLE(name)                                                   \
  absl::Status name##Example();                                                \
  TEST_F(HeaderExample, name) {                                                \
    const absl::Status status = name##Example();                               \
    if (absl::IsUnavailable(status)) GTEST_SKIP() << status;                   \
    EXPECT_TRUE(status.ok()) << status;                                        \
  }                                                                            \
  absl::Status name##Example()

#endif  // DAGRAD_TESTS_HEADER_EXAMPLES_H_
