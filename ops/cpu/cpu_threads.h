// ops/cpu/cpu_threads.h
//
// How many threads dagrad's CPU kernels use, and how they wait: the wait
// policy and the default thread budget. ops/cpu/cpu_runtime.h's NumThreads is
// the count every kernel uses; ShareWork says how the threads split the work.
//
// The threads are process-wide: every Executor in a process (two models
// trained side by side, a Run on any thread) shares one count, dagrad's one
// pool, and one team of OpenMP or BLIS threads at a time (a kernel that
// finds the team busy runs on its calling thread: TeamSlot,
// ops/cpu/internal/team_slot.h), so two executors never take every core
// each.
//
// Wait policy. BLIS's barrier spins without yielding and libgomp's idle
// threads spin before they sleep, so two threads that share a core with
// another process waste their time slices waiting for each other (10-100x
// slower steps, tools/bench/PERFORMANCE.md). Under kAuto, the default, the
// kernels measure how long the calling thread waited for a core (Linux
// schedstat) and, while that is more than kBusyWaitFraction of the time,
// share their work (ShareWork): every thread takes chunks of a kernel's work
// from dagrad's pool (ops/cpu/thread_pool.h) instead of OpenMP's one chunk
// per thread and BLIS's static split, so a thread that lost its core holds
// up one chunk, and a thread with nothing to do sleeps instead of spinning.
// They go back to OpenMP and BLIS, fastest on quiet cores, kBusyBackoffNs
// later (longer each time the cores are still busy). kSpin always uses
// OpenMP and BLIS (the behaviour before kAuto); kShare always shares (for
// cores that are always busy). Every policy uses every thread, and gives
// results of the same bits. libgomp reads
// OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in its constructor when it is
// loaded, before any of dagrad's code runs, so dagrad cannot set them for
// its own process; set them in the environment that starts it.
//
//   // setup: SavedThreads
//   DAGRAD_ASSIGN_OR_RETURN(WaitPolicy policy, ParseWaitPolicy("spin"));
//   SetWaitPolicy(policy);   // ActiveWaitPolicy() == WaitPolicy::kSpin

#ifndef DAGRAD_OPS_CPU_CPU_THREADS_H_
#define DAGRAD_OPS_CPU_CPU_THREADS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dagrad {

enum class WaitPolicy { kAuto, kSpin, kShare };

// ParseWaitPolicy reads "auto", "spin" or "share"; InvalidArgument naming
// the text and the choices otherwise.
absl::StatusOr<WaitPolicy> ParseWaitPolicy(absl::string_view text);

// WaitPolicyName is "auto", "spin" or "share".
std::string WaitPolicyName(WaitPolicy policy);

// SetWaitPolicy sets the policy for the whole process, from any thread.
void SetWaitPolicy(WaitPolicy policy);

// ActiveWaitPolicy is SetWaitPolicy's, else the environment's
// DAGRAD_WAIT_POLICY (read once, on first use), else kAuto. A
// DAGRAD_WAIT_POLICY that ParseWaitPolicy refuses makes ConfigureCpu fail
// (CheckWaitPolicyEnv's error); the policy is then kAuto.
WaitPolicy ActiveWaitPolicy();

// CheckWaitPolicyEnv is FailedPrecondition, naming DAGRAD_WAIT_POLICY, its
// text and the choices, when it is set and not a policy.
absl::Status CheckWaitPolicyEnv();

// The share of the time the calling thread may wait for a core before the
// kernels share their work, and for how long they then do.
inline constexpr double kBusyWaitFraction = 0.15;
// Each time the cores are busy again before a quiet sample window after the
// stay, the next stay doubles, up to kBusyMaxBackoffNs.
inline constexpr int64_t kBusyBackoffNs = 500'000'000;
inline constexpr int64_t kBusyMaxBackoffNs = 8'000'000'000;
// How often a thread reads its schedstat (6-7 us a read on a loaded Zen 5:
// 0.03% of the time).
inline constexpr int64_t kBusySampleNs = 20'000'000;

// BusyGauge decides, from samples of a thread's clock and of the time it
// has waited for a core (both in ns), whether the cores are busy: the
// pure part of kAuto, so that a test feeds it values.
//
//   BusyGauge gauge;
//   gauge.Sample(0, 0);
//   gauge.Sample(kBusySampleNs, kBusySampleNs / 2);   // waited half the time
//   // gauge.Busy(kBusySampleNs) == true, until kBusyBackoffNs later
class BusyGauge {
 public:
  // Sample takes the clock and the thread's total run-queue wait so far;
  // the first sample only starts the window.
  void Sample(int64_t now_ns, int64_t waited_ns);
  bool Busy(int64_t now_ns) const { return now_ns < busy_until_ns_; }
  int64_t busy_until_ns() const { return busy_until_ns_; }

 private:
  int64_t last_now_ns_ = -1;
  int64_t last_waited_ns_ = 0;
  int64_t busy_until_ns_ = 0;
  int64_t backoff_ns_ = kBusyBackoffNs;
  bool quiet_since_stay_ = true;
};

// ShareWork is true when the kernels share their work through dagrad's
// pool, with more than one thread: under kShare, and under kAuto while the
// cores are busy (the calling thread waits for them).
bool ShareWork();

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_CPU_THREADS_H_
