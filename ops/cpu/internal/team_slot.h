// ops/cpu/internal/team_slot.h
//
// TeamSlot: at most one OpenMP team or multi-threaded BLIS call at a time in
// the process. libgomp gives every calling thread a team of its own, and
// BLIS every call threads of its own, so two executors run from two threads
// would each take every core (2 x NumThreads() threads spinning on
// NumThreads() cores). A kernel that finds the slot taken runs on its
// calling thread alone, which gives the same bits: every kernel gives the
// same bits on any thread count. (dagrad's own pool, ops/cpu/thread_pool.h,
// is process-wide already: a second caller runs its chunks inline.)
//
//   const int threads = 4;  // NumThreads()
//   const TeamSlot team(/*wanted=*/threads > 1);
//   const int run_on = team.held() ? threads : 1;

#ifndef DAGRAD_OPS_CPU_INTERNAL_TEAM_SLOT_H_
#define DAGRAD_OPS_CPU_INTERNAL_TEAM_SLOT_H_

#include <atomic>

namespace dagrad {

class TeamSlot {
 public:
  // Takes the slot if `wanted` and free.
  explicit TeamSlot(bool wanted = true)
      : held_(wanted && !taken_.exchange(true, std::memory_order_acquire)) {}
  ~TeamSlot() {
    if (held_) taken_.store(false, std::memory_order_release);
  }
  TeamSlot(const TeamSlot&) = delete;
  TeamSlot& operator=(const TeamSlot&) = delete;

  // held: this caller may run a team of NumThreads() threads.
  bool held() const { return held_; }

 private:
  inline static std::atomic<bool> taken_{false};
  const bool held_;
};

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_TEAM_SLOT_H_
