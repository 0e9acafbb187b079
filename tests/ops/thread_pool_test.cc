// dagrad's chunk pool (ops/cpu/thread_pool.h) and ParallelFor on it under
// the share wait policy: every index runs exactly once, whatever the chunk
// and thread counts; nested calls stay on the calling thread; the pool's
// threads really run at once. No timing.

#include "ops/cpu/thread_pool.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/cpu_threads.h"
#include "ops/cpu/parallel.h"

namespace dagrad {
namespace {

// Runs counts how many times each chunk of a RunChunks ran.
std::vector<int> Runs(int64_t chunks, int threads) {
  std::vector<std::atomic<int>> hits(std::max<int64_t>(chunks, 0));
  RunChunks(chunks, threads, [&](int64_t c) { hits[c].fetch_add(1); });
  std::vector<int> out;
  for (const auto& h : hits) out.push_back(h.load());
  return out;
}

TEST(RunChunks, EveryChunkRunsExactlyOnce) {
  for (int64_t chunks : {0, 1, 2, 3, 7, 64, 1000, 100000}) {
    for (int threads : {-1, 0, 1, 2, 3, 8}) {
      const std::vector<int> runs = Runs(chunks, threads);
      EXPECT_EQ(runs, std::vector<int>(chunks, 1)) << chunks << " chunks, " << threads;
    }
  }
}

TEST(RunChunks, MoreThreadsThanChunksOrThanTheLimit) {
  EXPECT_EQ(Runs(2, 16), std::vector<int>(2, 1));
  EXPECT_EQ(Runs(5, kMaxPoolThreads + 100), std::vector<int>(5, 1));
}

TEST(RunChunks, NestedCallsRunOnTheCallingChunksThread) {
  EXPECT_FALSE(InChunk());
  std::atomic<int> strays{0}, outside{0}, inner_runs{0};
  RunChunks(8, 2, [&](int64_t) {
    if (!InChunk()) outside.fetch_add(1);
    const std::thread::id me = std::this_thread::get_id();
    RunChunks(16, 4, [&](int64_t) {
      inner_runs.fetch_add(1);
      if (std::this_thread::get_id() != me) strays.fetch_add(1);
    });
    if (!InChunk()) outside.fetch_add(1);  // the nested call leaves it set
  });
  EXPECT_FALSE(InChunk());
  EXPECT_EQ(inner_runs.load(), 8 * 16);
  EXPECT_EQ(strays.load(), 0);
  EXPECT_EQ(outside.load(), 0);
}

// Each chunk waits for all `threads` chunks to have started: only threads
// that run at once get there. The wait gives up after a long while, so a
// pool short of threads fails instead of hanging.
TEST(RunChunks, ThePoolsThreadsRunAtOnce) {
  for (int threads : {2, 3, 4}) {
    std::atomic<int> arrived{0}, met{0};
    RunChunks(threads, threads, [&](int64_t) {
      arrived.fetch_add(1);
      for (int i = 0; i < 2'000'000 && arrived.load() < threads; ++i) std::this_thread::yield();
      if (arrived.load() == threads) met.fetch_add(1);
    });
    EXPECT_EQ(met.load(), threads) << threads << " threads";
  }
}

TEST(RunChunks, CallsFromSeveralThreadsAtOnceEachRunEveryChunk) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call) {
        if (Runs(37, 2) != std::vector<int>(37, 1)) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// ParallelFor under share with the threads set: its ranges tile [0, n).
class ParallelForShared : public ::testing::Test {
 protected:
  void SetUp() override { SetWaitPolicy(WaitPolicy::kShare); }
  void TearDown() override {
    SetWaitPolicy(saved_policy_);
    EXPECT_TRUE(SetNumThreads(saved_threads_).ok());
  }
  // Tiles is true when ParallelFor(n, grain) covers [0, n) with ranges
  // that neither overlap nor leave a gap; `ranges` gets their count.
  static bool Tiles(int64_t n, int64_t grain, int64_t* ranges) {
    std::mutex m;
    std::set<std::pair<int64_t, int64_t>> seen;
    ParallelFor(n, grain, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> hold(m);
      seen.insert({b, e});
    });
    *ranges = static_cast<int64_t>(seen.size());
    int64_t next = 0;
    for (const auto& [b, e] : seen) {
      if (b != next || e <= b) return false;
      next = e;
    }
    return next == n;
  }
  WaitPolicy saved_policy_ = ActiveWaitPolicy();
  int saved_threads_ = NumThreads();
};

TEST_F(ParallelForShared, RangesTileTheLoopInSeveralChunksPerThread) {
  ASSERT_TRUE(SetNumThreads(3).ok());
  int64_t ranges = 0;
  ASSERT_TRUE(Tiles(1 << 20, 1, &ranges));
  EXPECT_EQ(ranges, 3 * kChunksPerThread);
  ASSERT_TRUE(Tiles(3, 1, &ranges));  // fewer elements than chunks
  EXPECT_LE(ranges, 3);
  ASSERT_TRUE(Tiles(10, 4, &ranges));  // the grain allows two
  EXPECT_LE(ranges, 2);
  ASSERT_TRUE(Tiles(1, 1, &ranges));
  EXPECT_EQ(ranges, 1);
}

}  // namespace
}  // namespace dagrad
