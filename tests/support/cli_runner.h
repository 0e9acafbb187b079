// tests/support/cli_runner.h
//
// Runs the dagrad program as a user runs it, for the CLI tests.
//
//   const CliResult r = RunDagrad("train --steps=2 --out=" + FreshDir("t"));
//   EXPECT_EQ(r.code, 0) << r.err;

#ifndef DAGRAD_TESTS_SUPPORT_CLI_RUNNER_H_
#define DAGRAD_TESTS_SUPPORT_CLI_RUNNER_H_

#include <string>

namespace dagrad::testing {

struct CliResult {
  int code;  // the exit status, or -1 when the program did not exit normally
  std::string out, err;
};

// RunDagrad runs `dagrad <args>` under `env` (e.g. "env X=1") if given and
// returns its exit status and output.
CliResult RunDagrad(const std::string& args, const std::string& env = "");

// FreshDir returns an empty directory under the test's temporary directory.
std::string FreshDir(const std::string& name);

// MetricsWithoutTime returns dir/metrics.csv without its last column
// (wall-clock seconds), to compare runs.
std::string MetricsWithoutTime(const std::string& dir);

// kTinyTrain trains a model small enough to run in well under a second.
inline constexpr char kTinyTrain[] =
    "train --vocab=8 --seq_len=8 --min_len=3 --dim=16 --heads=2 --layers=1 --ffn=32 --batch=8 "
    "--steps=20 --eval_every=5 --warmup=3 --threads=1 ";

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_CLI_RUNNER_H_
