#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/test_main.h"

namespace dagrad::testing {
namespace {

// UseOwnTempDir makes a directory under ::testing::TempDir() for this
// process and points TEST_TMPDIR, which TempDir() reads, at it; "" when it
// cannot, and the tests then write where they did before.
std::string UseOwnTempDir() {
  std::string dir = ::testing::TempDir() + "dagrad_tests_XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return "";
  setenv("TEST_TMPDIR", dir.c_str(), /*overwrite=*/1);
  return dir;
}

}  // namespace

void UseSpinWaitPolicy() { setenv("DAGRAD_WAIT_POLICY", "spin", /*overwrite=*/0); }

int RunTests(int argc, char** argv, const std::function<absl::Status()>& after_tests) {
  UseSpinWaitPolicy();
  ::testing::InitGoogleTest(&argc, argv);
  const std::string dir = UseOwnTempDir();
  int rc = RUN_ALL_TESTS();
  if (after_tests) {
    if (const absl::Status st = after_tests(); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      rc = 1;
    }
  }
  if (dir.empty()) return rc;
  if (rc == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  } else {
    std::fprintf(stderr, "the tests' files are kept in %s\n", dir.c_str());
  }
  return rc;
}

}  // namespace dagrad::testing
