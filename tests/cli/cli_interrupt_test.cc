// `dagrad train` under stop signals, non-finite values and bad
// hyper-parameters: a stopped run exits 128+signal with a checkpoint and
// resumes bit-identical to an uninterrupted one; a diverging run stops
// without saving a NaN; every bad value is a one-line usage error.
//
// Signals are raised by the program itself at exact points through its
// test hook (DAGRAD_TEST_RAISE, models/stop_signals.h): the handler and
// the stop path are the real ones, and no test depends on timing.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/cpu/cpu_runtime.h"
#include "tests/support/cli_runner.h"

namespace dagrad::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Raise(const std::string& spec) { return "env DAGRAD_TEST_RAISE=" + spec; }

// The uninterrupted run every resumed run must equal (made once).
const std::string& Reference() {
  static const std::string* dir = [] {
    auto* d = new std::string(FreshDir("interrupt_reference"));
    const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", *d));
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return *dir;
}

void ExpectEqualsReference(const std::string& dir) {
  EXPECT_EQ(MetricsWithoutTime(dir), MetricsWithoutTime(Reference()));
  auto model = ReadFile(dir + "/model.safetensors");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(*model, *ReadFile(Reference() + "/model.safetensors"));
  // The loss curves too: drawn from the rows as metrics.csv holds them.
  EXPECT_EQ(ReadFile(dir + "/loss.svg").value_or("none"),
            ReadFile(Reference() + "/loss.svg").value_or(""));
}

void ResumeToTheEnd(const std::string& dir) {
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("resumed from"));
}

// Stopping at `spec` exits `code`, says where, and resumes to the reference.
void StopAndResume(const std::string& name, const std::string& spec, int code,
                   const std::string& said) {
  const std::string dir = FreshDir(name);
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir), Raise(spec));
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_THAT(r.err, HasSubstr(said));
  ResumeToTheEnd(dir);
  ExpectEqualsReference(dir);
}

TEST(CliInterrupt, SigtermBetweenRowsStopsAt143AndResumesBitIdentical) {
  // Step 7 lies inside the window of the step-10 row: its steps 6 and 7
  // must count in that row after the resume as in the reference.
  StopAndResume("sigterm", "TERM@step:7", 143,
                "SIGTERM: stopped at step 7; resume with --resume");
}

// A resumed run reads its earlier rows back from metrics.csv, rounded to
// its digits: its loss curves are drawn from the rows so rounded in any
// run, or a grid line moved by a pixel's fraction (this model's losses).
TEST(CliInterrupt, AResumedRunDrawsTheLossCurvesOfOneNeverStopped) {
  const std::string dir = FreshDir("resumed_plot");
  const std::string args = "train --dim=64 --heads=4 --layers=2 --ffn=128 --batch=32 --seq_len=16 "
                           "--steps=30 --eval_every=10 --threads=1 --out=" + dir;
  ASSERT_EQ(RunDagrad(args + "/straight").code, 0);
  ASSERT_EQ(RunDagrad(args + "/resumed --stop_after=13").code, 0);
  ASSERT_EQ(RunDagrad(args + "/resumed --resume").code, 0);
  EXPECT_EQ(ReadFile(dir + "/resumed/loss.svg").value_or("none"),
            ReadFile(dir + "/straight/loss.svg").value_or(""));
}

TEST(CliInterrupt, TheSavedWindowGoesOnceARowIsWritten) {
  const std::string dir = FreshDir("window_file");
  EXPECT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir), Raise("TERM@step:7")).code, 143);
  EXPECT_TRUE(fs::exists(dir + "/metrics_window.csv"));
  ResumeToTheEnd(dir);
  EXPECT_FALSE(fs::exists(dir + "/metrics_window.csv"));
}

TEST(CliInterrupt, SigintDuringEvaluationStopsAt130AfterIt) {
  StopAndResume("sigint_eval", "INT@eval:10", 130,
                "SIGINT: stopped at step 10; resume with --resume");
}

TEST(CliInterrupt, Sigusr1Exits138) {
  StopAndResume("sigusr1", "USR1@step:1", 138, "SIGUSR1: stopped at step 1");
}

TEST(CliInterrupt, StopWhileWritingTheOutputsResumesToWriteThem) {
  const std::string dir = FreshDir("stop_outputs");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir), Raise("TERM@outputs"));
  EXPECT_EQ(r.code, 143) << r.err;
  EXPECT_THAT(r.err, HasSubstr("stopped at step 20; resume with --resume"));
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/train_step.dot"));
  ResumeToTheEnd(dir);
  ExpectEqualsReference(dir);
  EXPECT_TRUE(fs::exists(dir + "/train_step.dot"));
}

TEST(CliInterrupt, StoppedTwiceInARowResumesBitIdentical) {
  const std::string dir = FreshDir("stop_twice");
  const std::string args = absl::StrCat(kTinyTrain, "--out=", dir);
  EXPECT_EQ(RunDagrad(args, Raise("TERM@step:7")).code, 143);
  // Stopped again one step after the resume: the reopened window goes on.
  EXPECT_EQ(RunDagrad(args + " --resume", Raise("TERM@step:8")).code, 143);
  ResumeToTheEnd(dir);
  ExpectEqualsReference(dir);
}

// RunRaw runs the program directly (no shell between) and returns the raw
// wait status.
int RunRaw(const std::string& args, const std::string& raise) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("DAGRAD_TEST_RAISE", raise.c_str(), 1);
    const std::string cmd = absl::StrCat("exec ", DAGRAD_CLI_PATH, " ", args, " > /dev/null 2>&1");
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(CliInterrupt, SecondSignalEndsAtOnceAndTheLastCheckpointStands) {
  const std::string dir = FreshDir("second_signal");
  // The second SIGTERM arrives while the first is handled, before the stop
  // saves step 7: the process dies of it, and step 5's checkpoint stands.
  const int status = RunRaw(absl::StrCat(kTinyTrain, "--out=", dir), "TERM@step:7,TERM@stopping");
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  auto ckpt = ReadSafetensors(dir + "/checkpoint.safetensors");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->metadata["dagrad.step"], "5");
  ResumeToTheEnd(dir);
  ExpectEqualsReference(dir);
}

// ---- non-finite values ----------------------------------------------------

// Every tensor of every checkpoint in `dir` is finite.
void ExpectNoNonFiniteSaved(const std::string& dir) {
  for (const char* name : {"checkpoint.safetensors", "model.safetensors"}) {
    if (!fs::exists(dir + "/" + name)) continue;
    auto f = ReadSafetensors(dir + "/" + name);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_TRUE(RequireFinite(*f).ok()) << name << ": " << RequireFinite(*f);
  }
}

TEST(CliNonFinite, HugeLearningRateStopsWithExit1AndNoNaNSaved) {
  for (const char* optimizer : {"adam", "sgd", "adamw --weight_decay=0.01"}) {
    const std::string dir = FreshDir("huge_lr");
    const CliResult r = RunDagrad(
        absl::StrCat(kTinyTrain, "--out=", dir, " --lr=1e30 --optimizer=", optimizer));
    EXPECT_EQ(r.code, 1) << optimizer << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("its update was not applied")) << optimizer;
    EXPECT_THAT(r.err, ::testing::ContainsRegex("step [0-9]+: the (loss|gradient norm) is"));
    EXPECT_THAT(r.err, HasSubstr("--check_numerics"));
    ExpectNoNonFiniteSaved(dir);
    EXPECT_FALSE(fs::exists(dir + "/model.safetensors")) << optimizer;
  }
}

TEST(CliNonFinite, SkipModeCountsSkipsAndStopsAfterARunOfThem) {
  const std::string dir = FreshDir("skip_mode");
  const CliResult r =
      RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --eval_every=1 --lr=1e30 "
                                                        "--on_nonfinite=skip "
                                                        "--max_consecutive_skips=4"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("4 steps in a row were not finite"));
  ExpectNoNonFiniteSaved(dir);
  // metrics.csv: one row per step up to the stop; the three skipped before
  // it are counted, and a row of skipped steps has no loss.
  const std::string metrics = *ReadFile(dir + "/metrics.csv");
  std::vector<std::string> lines = absl::StrSplit(metrics, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "step,loss,train_accuracy,eval_loss,eval_accuracy,lr,skipped,elapsed_s");
  int skipped = 0;
  for (size_t i = lines.size() - 3; i < lines.size(); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 8u) << lines[i];
    EXPECT_EQ(f[6], "1") << lines[i];
    EXPECT_EQ(f[1], "nan") << lines[i];
    skipped += f[6] == "1";
  }
  EXPECT_EQ(skipped, 3);
}

TEST(CliNonFinite, SkipModeResumesBitIdenticalWithTheRunOfSkipsCarriedOver) {
  // Steps 2 on are skipped, and the 12th in a row (step 13) ends the run.
  // The stopped run resumes with 6 in a row and must end at step 13 too.
  const std::string args = absl::StrCat(kTinyTrain, "--lr=1e30 --on_nonfinite=skip ",
                                        "--max_consecutive_skips=12 --out=");
  const std::string whole = FreshDir("skip_whole"), parts = FreshDir("skip_parts");
  const CliResult w = RunDagrad(args + whole);
  EXPECT_EQ(w.code, 1) << w.err;
  EXPECT_THAT(w.err, HasSubstr("step 13: "));
  EXPECT_EQ(RunDagrad(args + parts, Raise("TERM@step:7")).code, 143);
  const CliResult p = RunDagrad(args + parts + " --resume");
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_THAT(p.err, HasSubstr("step 13: "));
  EXPECT_EQ(MetricsWithoutTime(parts), MetricsWithoutTime(whole));
  EXPECT_EQ(*ReadFile(parts + "/checkpoint.safetensors"),
            *ReadFile(whole + "/checkpoint.safetensors"));
}

TEST(CliNonFinite, BadPolicyIsAUsageError) {
  const CliResult r = RunDagrad("train --on_nonfinite=ignore");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--on_nonfinite: unknown non-finite policy 'ignore'"));
}

// ---- hyper-parameters -------------------------------------------------------

TEST(CliValidation, EveryBadValueIsAOneLineUsageError) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"--lr=nan", "lr must be finite and > 0, got nan"},
      {"--lr=inf", "lr must be finite and > 0, got inf"},
      {"--optimizer=adamw --weight_decay=nan", "weight_decay must be finite and >= 0, got nan"},
      {"--weight_decay=-1", "weight_decay must be finite and >= 0, got -1"},
      {"--clip=inf", "clip must be finite and >= 0, got inf"},
      {"--clip=nan", "clip must be finite and >= 0, got nan"},
      {"--dropout=nan", "dropout must be in [0, 1)"},
      {"--max_consecutive_skips=0", "max_consecutive_skips must be >= 1, got 0"},
      {"--threads=100000", "--threads must be at most"},
      {absl::StrCat("--threads=", MaxThreads() + 1),
       absl::StrCat("--threads must be at most ", MaxThreads(), " (4 x the hardware threads), got ",
                    MaxThreads() + 1)},
  };
  for (const auto& c : cases) {
    const std::string dir = FreshDir("bad_value");
    const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " ", c.args));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(dir + "/checkpoint.safetensors")) << c.args;
  }
}

TEST(CliValidation, ThreadsUpToTheLimitRun) {
  const CliResult r = RunDagrad(absl::StrCat("info --threads=", MaxThreads()));
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(CliValidation, DagradNumThreadsAboveTheLimitIsAClearError) {
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", FreshDir("env_threads")),
                                "env DAGRAD_NUM_THREADS=100000");
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("DAGRAD_NUM_THREADS='100000' is not a thread count in [1, "));
}

}  // namespace
}  // namespace dagrad::testing
