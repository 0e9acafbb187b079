// The thread count set is the count used, in every calling thread
// (DESIGN.md). Kernels spread work with ParallelFor, so these tests count
// the OpenMP team inside it, from the main thread and from a std::thread.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/cpu_threads.h"
#include "ops/cpu/parallel.h"

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

// SpinPolicy holds the wait policy at `spin` while it lives: under `share`
// (or `auto` on cores it finds busy) the pool runs the chunks, and the
// OpenMP team these tests count is always 1.
class SpinPolicy {
 public:
  SpinPolicy() { SetWaitPolicy(WaitPolicy::kSpin); }
  ~SpinPolicy() { SetWaitPolicy(saved_); }

 private:
  WaitPolicy saved_ = ActiveWaitPolicy();
};

// Restores the process's count after each test.
class ThreadCountTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(SetNumThreads(saved_).ok()); }
  int saved_ = NumThreads();
  SpinPolicy spin_;
};

TEST_F(ThreadCountTest, OneThreadHoldsInEveryCallingThread) {
  ASSERT_TRUE(SetNumThreads(1).ok());
  EXPECT_EQ(NumThreads(), 1);
  EXPECT_EQ(LargestTeam(), 1);
  EXPECT_EQ(LargestTeamOnNewThread(), 1);
}

TEST_F(ThreadCountTest, CountAboveTheCoresIsUsedAsSet) {
  // More threads than cores is allowed (oversubscription), so the team's
  // size can be checked on any machine.
  // OMP_THREAD_LIMIT, when set, holds every team below it.
  const int n = static_cast<int>(std::max(2u, std::thread::hardware_concurrency())) + 1;
  ASSERT_TRUE(SetNumThreads(n).ok());
  EXPECT_EQ(LargestTeam(), std::min(n, omp_get_thread_limit()));
  EXPECT_EQ(LargestTeamOnNewThread(), std::min(n, omp_get_thread_limit()));
  ASSERT_TRUE(SetNumThreads(2).ok());
  EXPECT_EQ(LargestTeam(), std::min(2, omp_get_thread_limit()));
  EXPECT_EQ(LargestTeamOnNewThread(), std::min(2, omp_get_thread_limit()));
}

// Two threads' kernels at once (two executors) ran a team of NumThreads()
// each under OpenMP: 4 threads computing on 2 cores. One team runs at a
// time; the other caller's chunk runs on its own thread.
TEST_F(ThreadCountTest, TwoCallingThreadsShareOneTeam) {
  ASSERT_TRUE(SetNumThreads(2).ok());
  std::atomic<int> running{0}, most{0};
  auto work = [&] {
    for (int i = 0; i < 40; ++i) {
      ParallelFor(2, 1, [&](int64_t, int64_t) {
        const int now = ++running;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        --running;
      });
    }
  };
  std::thread first(work), second(work);
  first.join();
  second.join();
  EXPECT_LE(most.load(), 3) << "chunks at once: one team of 2, and the other caller";
  EXPECT_GE(most.load(), 2);
}

// A dynamic team (OMP_DYNAMIC) may be smaller than asked: ParallelFor's
// never is, and the caller's own setting is back after it.
TEST_F(ThreadCountTest, ADynamicTeamSettingIsNotFollowedAndIsKept) {
  const int saved = omp_get_dynamic();
  omp_set_dynamic(1);
  ASSERT_TRUE(SetNumThreads(2).ok());
  EXPECT_EQ(LargestTeam(), std::min(2, omp_get_thread_limit()));
  EXPECT_TRUE(omp_get_dynamic());
  omp_set_dynamic(saved);
}

TEST_F(ThreadCountTest, NonPositiveCountMeansOne) {
  ASSERT_TRUE(SetNumThreads(0).ok());
  EXPECT_EQ(NumThreads(), 1);
  EXPECT_EQ(LargestTeam(), 1);
}

TEST_F(ThreadCountTest, CountAboveTheLimitIsRefusedAndChangesNothing) {
  ASSERT_TRUE(SetNumThreads(2).ok());
  const absl::Status st = SetNumThreads(MaxThreads() + 1);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(absl::StrCat(MaxThreads() + 1)));
  EXPECT_EQ(NumThreads(), 2);
  EXPECT_FALSE(SetNumThreads(100000).ok());
  EXPECT_TRUE(SetNumThreads(MaxThreads()).ok());
  EXPECT_EQ(MaxThreads(), 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// ctest runs this in a process of its own with DAGRAD_NUM_THREADS=1
// (tests/CMakeLists.txt, test threads_env); elsewhere it has nothing to check.
TEST(ThreadCountEnv, DagradNumThreadsIsObeyed) {
  const char* env = std::getenv("DAGRAD_NUM_THREADS");
  if (env == nullptr) GTEST_SKIP() << "runs under ctest's threads_env with DAGRAD_NUM_THREADS set";
  SpinPolicy spin;
  const int want = std::atoi(env);
  EXPECT_EQ(NumThreads(), want);
  EXPECT_EQ(LargestTeam(), std::min(want, omp_get_thread_limit()));
  EXPECT_EQ(LargestTeamOnNewThread(), std::min(want, omp_get_thread_limit()));
}

}  // namespace
}  // namespace dagrad
