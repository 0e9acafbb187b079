// `dagrad info`'s threads line: the wait policy in force (--wait_policy,
// DAGRAD_WAIT_POLICY, else auto) and where the thread count came from.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_runner.h"

namespace dagrad::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

TEST(CliThreads, InfoSaysWhichWaitPolicyIsInForce) {
  const CliResult fallback = RunDagrad("info", "env -u DAGRAD_WAIT_POLICY");
  ASSERT_EQ(fallback.code, 0) << fallback.err;
  EXPECT_THAT(fallback.out, ContainsRegex("\nthreads: [0-9]+[^\n]*, wait policy auto\n"));
  const CliResult env = RunDagrad("info", "env DAGRAD_WAIT_POLICY=spin");
  ASSERT_EQ(env.code, 0) << env.err;
  EXPECT_THAT(env.out, HasSubstr(", wait policy spin\n"));
  const CliResult flag = RunDagrad("info --wait_policy=auto", "env DAGRAD_WAIT_POLICY=spin");
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_THAT(flag.out, HasSubstr(", wait policy auto\n"));
}

TEST(CliThreads, AnUnknownWaitPolicyIsAUsageErrorNamingTheChoices) {
  const CliResult flag = RunDagrad("info --wait_policy=passive");
  EXPECT_EQ(flag.code, 2);
  EXPECT_THAT(flag.err, HasSubstr("--wait_policy: wait policy 'passive' is not one of 'auto' "
                                  "or 'spin'"));
  const CliResult env = RunDagrad("info", "env DAGRAD_WAIT_POLICY=sleepy");
  EXPECT_EQ(env.code, 2);
  EXPECT_THAT(env.err, HasSubstr("DAGRAD_WAIT_POLICY='sleepy' is not a wait policy; valid: "
                                 "'auto' or 'spin'"));
}

TEST(CliThreads, InfoSaysWhereTheThreadCountCameFrom) {
  const CliResult flag = RunDagrad("info --threads=1");
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_THAT(flag.out, HasSubstr("\nthreads: 1 (SetNumThreads), "));
  const CliResult env = RunDagrad("info", "env DAGRAD_NUM_THREADS=1");
  ASSERT_EQ(env.code, 0) << env.err;
  EXPECT_THAT(env.out, HasSubstr("\nthreads: 1 (DAGRAD_NUM_THREADS), "));
  const CliResult fallback = RunDagrad("info", "env -u DAGRAD_NUM_THREADS");
  ASSERT_EQ(fallback.code, 0) << fallback.err;
  EXPECT_THAT(fallback.out, ContainsRegex("\nthreads: [0-9]+ \\([0-9]+ hardware threads.* -> "
                                          "[0-9]+\\), "));
}

}  // namespace
}  // namespace dagrad::testing
