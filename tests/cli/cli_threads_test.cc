// `dagrad info`'s threads line: the wait policy in force (--wait_policy,
// DAGRAD_WAIT_POLICY, else auto) and where the thread count came from.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/io/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// InfoOut is the output of `dagrad info <args>` under `env`, which must
// succeed.
std::string InfoOut(const std::string& args, const std::string& env) {
  const CliResult r = RunDagrad("info " + args, env);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

TEST(CliThreads, InfoSaysWhichWaitPolicyIsInForce) {
  EXPECT_THAT(InfoOut("", "env -u DAGRAD_WAIT_POLICY"),
              ContainsRegex("\nthreads: [0-9]+[^\n]*, wait policy auto\n"));
  EXPECT_THAT(InfoOut("", "env DAGRAD_WAIT_POLICY=spin"), HasSubstr(", wait policy spin\n"));
  EXPECT_THAT(InfoOut("--wait_policy=auto", "env DAGRAD_WAIT_POLICY=spin"),
              HasSubstr(", wait policy auto\n"));
}

TEST(CliThreads, AnUnknownWaitPolicyIsAUsageErrorNamingTheChoices) {
  const CliResult flag = RunDagrad("info --wait_policy=passive");
  EXPECT_EQ(flag.code, 2);
  EXPECT_THAT(flag.err, HasSubstr("--wait_policy: wait policy 'passive' is not one of 'auto', "
                                  "'spin' or 'share'"));
  const CliResult env = RunDagrad("info", "env DAGRAD_WAIT_POLICY=sleepy");
  EXPECT_EQ(env.code, 2);
  EXPECT_THAT(env.err, HasSubstr("DAGRAD_WAIT_POLICY='sleepy' is not a wait policy; valid: "
                                 "'auto', 'spin' or 'share'"));
}

TEST(CliThreads, EveryCommandThatRunsKernelsTakesTheWaitPolicy) {
  for (const char* command : {"train --steps=1", "eval --checkpoint=none.safetensors",
                              "generate --checkpoint=none.safetensors"}) {
    const CliResult r = RunDagrad(absl::StrCat(command, " --wait_policy=passive"));
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_THAT(r.err, HasSubstr("--wait_policy: wait policy 'passive' is not one of")) << command;
  }
}

TEST(CliThreads, InfoSaysWhereTheThreadCountCameFrom) {
  EXPECT_THAT(InfoOut("--threads=1", ""), HasSubstr("\nthreads: 1 (SetNumThreads), "));
  EXPECT_THAT(InfoOut("", "env DAGRAD_NUM_THREADS=1"),
              HasSubstr("\nthreads: 1 (DAGRAD_NUM_THREADS), "));
  EXPECT_THAT(InfoOut("", "env -u DAGRAD_NUM_THREADS"),
              ContainsRegex("\nthreads: [0-9]+ \\([0-9]+ hardware threads.* -> [0-9]+\\), "));
}

// --threads gives the same bits at any count, also where dagrad's kernel
// level and BLIS's kernel set round differently (the baseline level has
// no fused multiply-add; skx's and haswell's BLIS do): a product past 2^18
// multiply-adds went to SmallGemm on one thread and to BLIS on two. Its
// linear layers (128 rows, 64 x 64) are such products.
TEST(CliThreads, TheBaselineLevelTrainsTheSameBitsAtAnyThreadCount) {
  const std::string dir = FreshDir("threads_bits");
  const std::string train =
      "train --vocab=8 --seq_len=8 --min_len=3 --dim=64 --heads=2 --layers=1 --ffn=64 "
      "--batch=16 --steps=3 --eval_every=3 --warmup=0 ";
  for (const char* threads : {"1", "2"}) {
    const CliResult r = RunDagrad(absl::StrCat(train, "--threads=", threads, " --out=", dir, "/t",
                                               threads),
                                  "env DAGRAD_CPU_ISA=baseline");
    ASSERT_EQ(r.code, 0) << r.err;
  }
  ASSERT_OK_AND_ASSIGN(const std::string one, ReadFile(dir + "/t1/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(const std::string two, ReadFile(dir + "/t2/model.safetensors"));
  EXPECT_TRUE(one == two) << "the model trained on 1 and on 2 threads differs";
}

// BLIS aborted the process ("A different number of threads was created
// than was requested") when OpenMP's team came out smaller than the count:
// above OMP_THREAD_LIMIT, or a dynamic team. Both now train, and the same
// bits as an unlimited run.
TEST(CliThreads, OpenMpLimitsOnTheTeamStillTrainTheSameBits) {
  const std::string dir = FreshDir("threads_omp_limits");
  const std::string train =
      "train --vocab=8 --seq_len=8 --min_len=3 --dim=64 --heads=2 --layers=1 --ffn=64 "
      "--batch=16 --steps=3 --eval_every=3 --warmup=0 --threads=3 --wait_policy=spin ";
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"free", ""}, {"limit", "env OMP_THREAD_LIMIT=2"}, {"dynamic", "env OMP_DYNAMIC=true"}};
  for (const auto& [name, env] : runs) {
    const CliResult r = RunDagrad(absl::StrCat(train, "--out=", dir, "/", name), env);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
  }
  ASSERT_OK_AND_ASSIGN(const std::string free, ReadFile(dir + "/free/model.safetensors"));
  for (const char* name : {"limit", "dynamic"}) {
    ASSERT_OK_AND_ASSIGN(const std::string got, ReadFile(absl::StrCat(dir, "/", name,
                                                                      "/model.safetensors")));
    EXPECT_TRUE(got == free) << name << ": the model differs from the unlimited run's";
  }
  EXPECT_THAT(InfoOut("", "env -u DAGRAD_NUM_THREADS OMP_THREAD_LIMIT=1"),
              HasSubstr("; OMP_THREAD_LIMIT -> 1), "));
}

}  // namespace
}  // namespace dagrad::testing
