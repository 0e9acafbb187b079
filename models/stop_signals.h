// models/stop_signals.h
//
// Graceful stop of a long run on SIGTERM, SIGINT (Ctrl-C) or SIGUSR1.
// After InstallStopSignals(), the first such signal only records itself (in
// a lock-free atomic: the handler does no I/O and takes no lock); the run
// polls StopSignal() at safe points (between training steps, after an
// evaluation, between output files), saves its state and ends; `dagrad
// train` exits 128 + the signal (143, 130, 138). A second signal while the
// first is being handled ends the process at once with the default
// disposition: the user asked twice. Files are written by rename, so that
// leaves every file either old or new. Fit (models/fit.h) stops this way
// when its stop_requested says so:
//
//   FitOptions options{.dir = "runs/x", .stop_requested = StopOnSignals()};
//
// Test hook (not a user interface): DAGRAD_TEST_RAISE="SIG@phase[:step],..."
// makes MaybeRaiseForTest(phase, step) raise SIG (TERM, INT or USR1) in
// this process when it reaches that phase (and step), so that tests stop a
// run at an exact point without timing, e.g. "TERM@step:7" or
// "INT@eval:10,INT@stopping".

#ifndef DAGRAD_MODELS_STOP_SIGNALS_H_
#define DAGRAD_MODELS_STOP_SIGNALS_H_

#include <cstdint>
#include <functional>
#include <string>

namespace dagrad::models {

// InstallStopSignals sets the handlers of SIGTERM, SIGINT and SIGUSR1.
void InstallStopSignals();

// StopSignal is the first stop signal received, or 0.
int StopSignal();

// StopOnSignals installs the handlers and returns whether a stop signal
// has come, as a function (what FitOptions::stop_requested takes).
std::function<bool()> StopOnSignals();

// StopSignalName is "SIGTERM", "SIGINT" or "SIGUSR1" for those signals.
std::string StopSignalName(int sig);

// MaybeRaiseForTest raises the signals DAGRAD_TEST_RAISE names for `phase`
// (and `step`, when the entry gives one); a no-op when it is unset. Each
// entry raises once, from whichever thread comes first (the replicas of
// --replicas reach each phase together).
void MaybeRaiseForTest(const std::string& phase, int64_t step = -1);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_STOP_SIGNALS_H_
