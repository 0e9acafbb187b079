#include "models/stop_signals.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace dagrad::models {
namespace {

// The handler may touch nothing but a lock-free atomic.
std::atomic<int> first_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};

void SetHandler(int sig, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  // Restart interrupted reads and writes: the command stops at its own
  // safe points, not in the middle of a system call.
  action.sa_flags = SA_RESTART;
  sigaction(sig, &action, nullptr);
}

extern "C" void OnStopSignal(int sig) {
  int none = 0;
  if (first_signal.compare_exchange_strong(none, sig)) return;
  // The second signal: default disposition, delivered when this handler
  // returns (the signal is blocked while it runs). sigaction and raise are
  // async-signal-safe.
  SetHandler(sig, SIG_DFL);
  raise(sig);
}

int SignalByName(absl::string_view name) {
  if (name == "TERM") return SIGTERM;
  if (name == "INT") return SIGINT;
  if (name == "USR1") return SIGUSR1;
  return 0;
}

struct TestRaise {
  int sig = 0;
  std::string phase;
  int64_t step = -1;  // -1: any step
  bool fired = false;
};

// TestRaises parses DAGRAD_TEST_RAISE once; malformed entries are ignored
// (it is a test hook, not a user interface).
std::vector<TestRaise>& TestRaises() {
  static auto* raises = [] {
    auto* out = new std::vector<TestRaise>();
    const char* env = std::getenv("DAGRAD_TEST_RAISE");
    if (env == nullptr) return out;
    for (absl::string_view entry : absl::StrSplit(env, ',', absl::SkipEmpty())) {
      std::vector<absl::string_view> sig_at = absl::StrSplit(entry, '@');
      if (sig_at.size() != 2) continue;
      std::vector<absl::string_view> phase_step = absl::StrSplit(sig_at[1], ':');
      TestRaise r{.sig = SignalByName(sig_at[0]), .phase = std::string(phase_step[0])};
      if (phase_step.size() == 2 && !absl::SimpleAtoi(phase_step[1], &r.step)) continue;
      if (r.sig != 0) out->push_back(r);
    }
    return out;
  }();
  return *raises;
}

}  // namespace

void InstallStopSignals() {
  for (int sig : kStopSignals) SetHandler(sig, OnStopSignal);
}

int StopSignal() { return first_signal.load(); }

std::function<bool()> StopOnSignals() {
  InstallStopSignals();
  return [] { return StopSignal() != 0; };
}

std::string StopSignalName(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
  }
  return "signal " + std::to_string(sig);
}

void MaybeRaiseForTest(const std::string& phase, int64_t step) {
  // Replicas on threads reach each phase together: one of them raises.
  static std::mutex* const mu = new std::mutex();
  std::lock_guard<std::mutex> lock(*mu);
  for (TestRaise& r : TestRaises()) {
    if (r.fired || r.phase != phase || (r.step >= 0 && r.step != step)) continue;
    r.fired = true;
    raise(r.sig);
  }
}

}  // namespace dagrad::models
