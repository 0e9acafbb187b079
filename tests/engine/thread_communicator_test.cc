// ThreadCommunicators (engine/device/thread_communicator.h): ranks as
// threads sum, broadcast and refuse as the MPI communicator does, give
// every rank the same bits, and fail instead of waiting when a rank left.

#include "engine/device/thread_communicator.h"

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

// OnRanks runs body(rank) on one thread per rank of `ranks` and returns
// each rank's status.
std::vector<absl::Status> OnRanks(const std::vector<std::shared_ptr<Communicator>>& ranks,
                                  const std::function<absl::Status(Communicator&)>& body) {
  std::vector<absl::Status> status(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] { status[r] = body(*ranks[r]); });
  }
  for (std::thread& t : threads) t.join();
  return status;
}

template <typename T>
void ExpectSums(int size, int64_t count) {
  const auto ranks = ThreadCommunicators(size);
  std::vector<std::vector<T>> buffers(size, std::vector<T>(count));
  for (int r = 0; r < size; ++r) {
    for (int64_t i = 0; i < count; ++i) buffers[r][i] = static_cast<T>(0.1 * (r + 1) + i);
  }
  const std::vector<absl::Status> status = OnRanks(ranks, [&](Communicator& c) {
    std::vector<T>& b = buffers[c.rank()];
    return c.AllReduceSum({.data = b.data(), .count = count, .dtype = DTypeOf<T>::value});
  });
  for (int r = 0; r < size; ++r) {
    ASSERT_OK(status[r]);
    for (int64_t i = 0; i < count; ++i) {
      T want = static_cast<T>(0.1 + i);  // rank 0, then the others in order
      for (int q = 1; q < size; ++q) want += static_cast<T>(0.1 * (q + 1) + i);
      ASSERT_EQ(buffers[r][i], want) << "rank " << r << " element " << i;
    }
  }
}

TEST(ThreadCommunicator, EveryRankGetsTheSumInRankOrder) {
  ExpectSums<float>(3, 1000);
  ExpectSums<double>(4, 777);
  ExpectSums<float>(3, 2);  // fewer elements than ranks: a rank sums none
  ExpectSums<double>(1, 5);
}

TEST(ThreadCommunicator, NamesItsRanks) {
  const auto ranks = ThreadCommunicators(3);
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[2]->rank(), 2);
  EXPECT_EQ(ranks[2]->size(), 3);
  EXPECT_EQ(ranks[0]->name(), "threads (3 ranks)");
  EXPECT_FALSE(ranks[0]->accepts_device_memory());
}

TEST(ThreadCommunicator, StartedSumsAreThereAtTheWait) {
  const auto ranks = ThreadCommunicators(2);
  std::vector<std::vector<double>> buffers = {{1, 2}, {10, 20}};
  const auto status = OnRanks(ranks, [&](Communicator& c) -> absl::Status {
    double* data = buffers[c.rank()].data();
    if (absl::Status st = c.StartAllReduceSum({.data = data, .count = 2, .dtype = DType::kFloat64});
        !st.ok()) {
      return st;
    }
    if (absl::Status st = c.WaitAllReduce(data); !st.ok()) return st;
    return c.WaitAllReduce(data);  // a second wait: nothing was started
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_STATUS(status[r], absl::StatusCode::kFailedPrecondition, "was not started");
    EXPECT_EQ(buffers[r], (std::vector<double>{11, 22}));
  }
}

TEST(ThreadCommunicator, BroadcastCopiesTheRootsBytes) {
  const auto ranks = ThreadCommunicators(3);
  std::vector<std::vector<int32_t>> buffers = {{0, 0}, {7, 8}, {0, 0}};
  const auto status = OnRanks(ranks, [&](Communicator& c) {
    return c.Broadcast(buffers[c.rank()].data(), 2 * sizeof(int32_t), 1);
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_OK(status[r]);
    EXPECT_EQ(buffers[r], (std::vector<int32_t>{7, 8}));
  }
}

TEST(ThreadCommunicator, RanksThatDisagreeAllGetTheSameError) {
  const auto ranks = ThreadCommunicators(2);
  std::vector<std::vector<float>> buffers = {{1, 2, 3}, {1, 2, 3}};
  auto status = OnRanks(ranks, [&](Communicator& c) {
    return c.AllReduceSum({.data = buffers[c.rank()].data(), .count = 2 + c.rank(),
                           .dtype = DType::kFloat32});
  });
  for (const absl::Status& st : status) {
    EXPECT_STATUS(st, absl::StatusCode::kInvalidArgument,
                  "all-reduce: rank 1 gave 3 float32 elements, rank 0 2 float32 elements");
  }
  status = OnRanks(ranks, [&](Communicator& c) {
    return c.Broadcast(buffers[c.rank()].data(), 4, 2);
  });
  for (const absl::Status& st : status) {
    EXPECT_STATUS(st, absl::StatusCode::kInvalidArgument, "broadcast from rank 2 of 2");
  }
  status = OnRanks(ranks, [&](Communicator& c) {
    return c.AllReduceSum({.data = buffers[c.rank()].data(), .count = 3, .dtype = DType::kInt32});
  });
  for (const absl::Status& st : status) {
    EXPECT_STATUS(st, absl::StatusCode::kInvalidArgument, "float32 or float64, got int32");
  }
  // The group still works after refusals.
  status = OnRanks(ranks, [&](Communicator& c) {
    return c.AllReduceSum({.data = buffers[c.rank()].data(), .count = 3,
                           .dtype = DType::kFloat32});
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_OK(status[r]);
    EXPECT_EQ(buffers[r], (std::vector<float>{2, 4, 6}));
  }
}

// A rank that stops (its communicator destroyed) fails the others' waits.
TEST(ThreadCommunicator, ARankThatLeftFailsTheOthersInsteadOfHanging) {
  auto ranks = ThreadCommunicators(3);
  std::vector<float> x = {1};
  std::thread leaver([r = std::move(ranks[2])]() mutable { r.reset(); });
  std::vector<absl::Status> status(2);
  std::vector<std::thread> waiting;
  for (int r = 0; r < 2; ++r) {
    waiting.emplace_back([&, r] {
      std::vector<float> mine = {1};
      status[r] = ranks[r]->AllReduceSum({.data = mine.data(), .count = 1});
    });
  }
  leaver.join();
  for (std::thread& t : waiting) t.join();
  for (const absl::Status& st : status) {
    EXPECT_STATUS(st, absl::StatusCode::kAborted,
                  "rank 2 of 3 threads left the job before this collective");
  }
}

}  // namespace
}  // namespace dagrad::testing
