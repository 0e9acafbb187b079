// The thread count set is the count used, in every calling thread
// (DESIGN.md). Kernels spread work with ParallelFor, so these tests count
// the OpenMP team inside it, from the main thread and from a std::thread.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "gtest/gtest.h"
#include "ops/cpu_runtime.h"
#include "ops/parallel.h"

namespace dagrad {
namespace {

// LargestTeam runs a loop long enough to be split and returns the largest
// OpenMP team any of its chunks ran in.
int LargestTeam() {
  std::atomic<int> largest{0};
  ParallelFor(1 << 16, 1, [&](int64_t, int64_t) {
    int team = omp_get_num_threads();
    int seen = largest.load();
    while (team > seen && !largest.compare_exchange_weak(seen, team)) {
    }
  });
  return largest.load();
}

int LargestTeamOnNewThread() {
  int team = 0;
  std::thread([&] { team = LargestTeam(); }).join();
  return team;
}

// Restores the process's count after each test.
class ThreadCountTest : public ::testing::Test {
 protected:
  void TearDown() override { SetNumThreads(saved_); }
  int saved_ = NumThreads();
};

TEST_F(ThreadCountTest, OneThreadHoldsInEveryCallingThread) {
  SetNumThreads(1);
  EXPECT_EQ(NumThreads(), 1);
  EXPECT_EQ(LargestTeam(), 1);
  EXPECT_EQ(LargestTeamOnNewThread(), 1);
}

TEST_F(ThreadCountTest, CountAboveTheCoresIsUsedAsSet) {
  // More threads than cores is allowed (oversubscription), so the team's
  // size can be checked on any machine.
  const int n = static_cast<int>(std::max(2u, std::thread::hardware_concurrency())) + 1;
  SetNumThreads(n);
  EXPECT_EQ(LargestTeam(), n);
  EXPECT_EQ(LargestTeamOnNewThread(), n);
  SetNumThreads(2);
  EXPECT_EQ(LargestTeam(), 2);
  EXPECT_EQ(LargestTeamOnNewThread(), 2);
}

TEST_F(ThreadCountTest, NonPositiveCountMeansOne) {
  SetNumThreads(0);
  EXPECT_EQ(NumThreads(), 1);
  EXPECT_EQ(LargestTeam(), 1);
}

// ctest runs this in a process of its own with DAGRAD_NUM_THREADS=1
// (tests/CMakeLists.txt, test threads_env); elsewhere it has nothing to check.
TEST(ThreadCountEnv, DagradNumThreadsIsObeyed) {
  const char* env = std::getenv("DAGRAD_NUM_THREADS");
  if (env == nullptr) GTEST_SKIP() << "runs under ctest's threads_env with DAGRAD_NUM_THREADS set";
  const int want = std::atoi(env);
  EXPECT_EQ(NumThreads(), want);
  EXPECT_EQ(LargestTeam(), want);
  EXPECT_EQ(LargestTeamOnNewThread(), want);
}

}  // namespace
}  // namespace dagrad
