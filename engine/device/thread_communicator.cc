#include "engine/device/thread_communicator.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"

namespace dagrad {
namespace {

// What a rank brings to a collective: every rank reads every rank's.
struct Slot {
  void* data = nullptr;
  int64_t count = 0;  // elements of a sum, bytes of a broadcast
  DType dtype = DType::kFloat32;  // of a sum
  bool broadcast = false;
  int root = 0;                   // of a broadcast
};

std::string Describe(const Slot& s) {
  return !s.broadcast ? absl::StrCat(s.count, " ", DTypeName(s.dtype), " elements")
                    : absl::StrCat(s.count, " bytes from rank ", s.root);
}

// Group is what the ranks share: their slots and a barrier that a rank
// leaving breaks.
struct Group {
  explicit Group(int n) : size(n), slots(n) {}
  const int size;
  std::vector<Slot> slots;
  std::mutex mu;
  std::condition_variable changed;
  int arrived = 0;
  uint64_t generation = 0;
  int left = -1;  // the first rank that left, -1 while none has

  absl::Status Left() const {
    return absl::AbortedError(absl::StrCat("rank ", left, " of ", size,
                                           " threads left the job before this collective"));
  }

  // Barrier returns when every rank has arrived, or Aborted once one left.
  absl::Status Barrier() {
    std::unique_lock<std::mutex> lock(mu);
    if (left >= 0) return Left();
    const uint64_t mine = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      changed.notify_all();
      return absl::OkStatus();
    }
    changed.wait(lock, [&] { return generation != mine || left >= 0; });
    return generation != mine ? absl::OkStatus() : Left();
  }

  void Leave(int rank) {
    std::lock_guard<std::mutex> lock(mu);
    if (left < 0) left = rank;
    changed.notify_all();
  }
};

// Mismatch names the first rank whose slot differs from rank 0's (after a
// barrier every rank sees the same slots, so all agree).
absl::Status Mismatch(const Group& g, const char* what) {
  const Slot& first = g.slots[0];
  for (int r = 1; r < g.size; ++r) {
    const Slot& s = g.slots[r];
    if (s.count != first.count || s.dtype != first.dtype ||
        s.broadcast != first.broadcast || s.root != first.root) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": rank ", r, " gave ", Describe(s),
                                                     ", rank 0 ", Describe(first)));
    }
  }
  return absl::OkStatus();
}

// SumSlice adds every rank's elements [begin, end) in rank order and
// writes the sums to every rank's buffer. No other rank reads or writes
// these elements, so only the end needs a barrier: every slice is summed
// before any rank returns.
template <typename T>
absl::Status SumSlice(Group& g, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    T sum = static_cast<const T*>(g.slots[0].data)[i];
    for (int r = 1; r < g.size; ++r) sum += static_cast<const T*>(g.slots[r].data)[i];
    for (int r = 0; r < g.size; ++r) static_cast<T*>(g.slots[r].data)[i] = sum;
  }
  return g.Barrier();
}

class ThreadRank final : public SumAtStartCommunicator {
 public:
  ThreadRank(std::shared_ptr<Group> group, int rank) : g_(std::move(group)), rank_(rank) {}
  ~ThreadRank() override { g_->Leave(rank_); }

  int rank() const override { return rank_; }
  int size() const override { return g_->size; }
  std::string name() const override { return absl::StrCat("threads (", g_->size, " ranks)"); }

  // Each rank sums its slice of the elements over all ranks. Started sums
  // are done at once (SumAtStartCommunicator): the ranks are threads of one
  // process, and a sum waits only for the others to reach it.
  absl::Status AllReduceSum(const ReduceBuffer& b) override {
    if (absl::Status st = CheckReduceDType(b.dtype); !st.ok()) return st;
    g_->slots[rank_] = {.data = b.data, .count = b.count, .dtype = b.dtype};
    if (absl::Status st = Post("all-reduce"); !st.ok()) return st;
    const int64_t begin = b.count * rank_ / g_->size, end = b.count * (rank_ + 1) / g_->size;
    return b.dtype == DType::kFloat32 ? SumSlice<float>(*g_, begin, end)
                                      : SumSlice<double>(*g_, begin, end);
  }
  absl::Status Broadcast(void* data, int64_t bytes, int root) override {
    g_->slots[rank_] = {.data = data, .count = bytes, .broadcast = true, .root = root};
    if (absl::Status st = Post("broadcast"); !st.ok()) return st;
    if (rank_ != root && bytes > 0) std::memcpy(data, g_->slots[root].data, bytes);
    return g_->Barrier();
  }
  [[noreturn]] void Abort(int code) override { std::exit(code); }

 private:
  // Post waits for every rank's slot, then checks that they agree: every
  // rank returns the same error, after a second barrier, so that no rank
  // posts its next slot while another still reads this one.
  absl::Status Post(const char* what) {
    if (absl::Status st = g_->Barrier(); !st.ok()) return st;
    absl::Status agreed = Mismatch(*g_, what);
    const Slot& s = g_->slots[0];
    if (agreed.ok() && s.broadcast && (s.root < 0 || s.root >= g_->size)) {
      agreed = absl::InvalidArgumentError(
          absl::StrCat("broadcast from rank ", s.root, " of ", g_->size));
    }
    if (agreed.ok()) return agreed;
    if (absl::Status st = g_->Barrier(); !st.ok()) return st;
    return agreed;
  }

  std::shared_ptr<Group> g_;
  const int rank_;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> ThreadCommunicators(int size) {
  auto group = std::make_shared<Group>(size < 1 ? 1 : size);
  std::vector<std::shared_ptr<Communicator>> ranks;
  for (int r = 0; r < group->size; ++r) ranks.push_back(std::make_shared<ThreadRank>(group, r));
  return ranks;
}

void OnThreadRanks(int size, const std::function<void(std::shared_ptr<Communicator>)>& body) {
  std::vector<std::shared_ptr<Communicator>> ranks = ThreadCommunicators(size);
  std::vector<std::thread> threads;
  for (std::shared_ptr<Communicator>& rank : ranks) {
    threads.emplace_back([&body, mine = std::move(rank)]() mutable { body(std::move(mine)); });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace dagrad
