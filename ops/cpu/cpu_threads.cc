#include "ops/cpu/cpu_threads.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ops/cpu/cpu_runtime.h"

namespace dagrad {
namespace {

constexpr char kChoices[] = "'auto', 'spin' or 'share'";

// The policy in force: -1 until first use, then the environment's or
// SetWaitPolicy's.
std::atomic<int> policy{-1};

WaitPolicy EnvPolicy() {
  const char* env = std::getenv("DAGRAD_WAIT_POLICY");
  if (env == nullptr) return WaitPolicy::kAuto;
  absl::StatusOr<WaitPolicy> parsed = ParseWaitPolicy(env);
  return parsed.ok() ? *parsed : WaitPolicy::kAuto;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// ThreadWaitedNs is the calling thread's total time waiting on a run queue
// (the second field of Linux's schedstat), or -1 where it cannot be read.
int64_t ThreadWaitedNs() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return -1;
  unsigned long long ran = 0, waited = 0;
  const int got = std::fscanf(f, "%llu %llu", &ran, &waited);
  std::fclose(f);
  return got == 2 ? static_cast<int64_t>(waited) : -1;
}

// Each thread samples its own schedstat; the verdict is shared, so an
// executor thread that saw busy cores makes every thread use one.
std::atomic<int64_t> busy_until_ns{0};

bool CoresBusy() {
  thread_local BusyGauge gauge;
  thread_local int64_t next_sample_ns = 0;
  const int64_t now = MonotonicNs();
  if (now >= next_sample_ns) {
    next_sample_ns = now + kBusySampleNs;
    const int64_t waited = ThreadWaitedNs();
    if (waited >= 0) gauge.Sample(now, waited);
    if (gauge.Busy(now)) busy_until_ns.store(gauge.busy_until_ns(), std::memory_order_relaxed);
  }
  return now < busy_until_ns.load(std::memory_order_relaxed);
}

}  // namespace

absl::StatusOr<WaitPolicy> ParseWaitPolicy(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (t == "auto") return WaitPolicy::kAuto;
  if (t == "spin") return WaitPolicy::kSpin;
  if (t == "share") return WaitPolicy::kShare;
  return absl::InvalidArgumentError(
      absl::StrCat("wait policy '", text, "' is not one of ", kChoices));
}

std::string WaitPolicyName(WaitPolicy p) {
  switch (p) {
    case WaitPolicy::kAuto:
      return "auto";
    case WaitPolicy::kSpin:
      return "spin";
    case WaitPolicy::kShare:
      return "share";
  }
  return "auto";
}

void SetWaitPolicy(WaitPolicy p) { policy.store(static_cast<int>(p), std::memory_order_relaxed); }

WaitPolicy ActiveWaitPolicy() {
  int p = policy.load(std::memory_order_relaxed);
  if (p >= 0) return static_cast<WaitPolicy>(p);
  int expected = -1;
  policy.compare_exchange_strong(expected, static_cast<int>(EnvPolicy()),
                                 std::memory_order_relaxed);
  return static_cast<WaitPolicy>(policy.load(std::memory_order_relaxed));
}

absl::Status CheckWaitPolicyEnv() {
  const char* env = std::getenv("DAGRAD_WAIT_POLICY");
  if (env == nullptr || ParseWaitPolicy(env).ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "DAGRAD_WAIT_POLICY='", env, "' is not a wait policy; valid: ", kChoices));
}

void BusyGauge::Sample(int64_t now_ns, int64_t waited_ns) {
  if (last_now_ns_ >= 0 && now_ns > last_now_ns_) {
    const double fraction =
        static_cast<double>(waited_ns - last_waited_ns_) / static_cast<double>(now_ns - last_now_ns_);
    if (fraction > kBusyWaitFraction) {
      // Busy with no quiet window since the last stay: stay longer before
      // the next try with OpenMP and BLIS, which costs a slow step or two.
      backoff_ns_ = quiet_since_stay_ ? kBusyBackoffNs : std::min(2 * backoff_ns_, kBusyMaxBackoffNs);
      busy_until_ns_ = now_ns + backoff_ns_;
      quiet_since_stay_ = false;
    } else if (last_now_ns_ >= busy_until_ns_) {
      quiet_since_stay_ = true;  // a quiet window wholly after the stay
    }
  }
  last_now_ns_ = now_ns;
  last_waited_ns_ = waited_ns;
}

bool ShareWork() {
  if (NumThreads() == 1) return false;
  const WaitPolicy p = ActiveWaitPolicy();
  return p == WaitPolicy::kShare || (p == WaitPolicy::kAuto && CoresBusy());
}

}  // namespace dagrad
