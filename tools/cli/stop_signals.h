// tools/cli/stop_signals.h
//
// Graceful stop for long-running subcommands. After InstallStopSignals(),
// the first SIGTERM, SIGINT or SIGUSR1 only records itself (in a lock-free
// atomic: the handler does no I/O and takes no lock); the command polls
// StopSignal() at safe points — between training steps, after an
// evaluation, between output files — saves its state and exits with
// 128 + the signal (143, 130, 138). A second signal while the first is
// being handled ends the process at once with the default disposition: the
// user asked twice. Files are written by rename, so that leaves every file
// either old or new.
//
//   InstallStopSignals();
//   while (...) {
//     RunOneStep();
//     if (int sig = StopSignal()) return SaveAndExit(128 + sig);
//   }
//
// Test hook (not a user interface): DAGRAD_TEST_RAISE="SIG@phase[:step],..."
// makes MaybeRaiseForTest(phase, step) raise SIG (TERM, INT or USR1) in
// this process when it reaches that phase (and step), so that tests stop a
// run at an exact point without timing, e.g. "TERM@step:7" or
// "INT@eval:10,INT@stopping".

#ifndef DAGRAD_TOOLS_CLI_STOP_SIGNALS_H_
#define DAGRAD_TOOLS_CLI_STOP_SIGNALS_H_

#include <cstdint>
#include <string>

namespace dagrad::cli {

// InstallStopSignals sets the handlers of SIGTERM, SIGINT and SIGUSR1.
void InstallStopSignals();

// StopSignal is the first stop signal received, or 0.
int StopSignal();

// StopSignalName is "SIGTERM", "SIGINT" or "SIGUSR1" for those signals.
std::string StopSignalName(int sig);

// MaybeRaiseForTest raises the signals DAGRAD_TEST_RAISE names for `phase`
// (and `step`, when the entry gives one); a no-op when it is unset.
void MaybeRaiseForTest(const std::string& phase, int64_t step = -1);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_STOP_SIGNALS_H_
