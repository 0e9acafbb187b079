// models::Fit (models/fit.h), the library's training loop: the library-level
// twins of the CLI's reliability tests (cli_checkpoint_test.cc,
// cli_interrupt_test.cc). A run stopped anywhere and resumed — after
// stop_after, on a stop request, from the previous checkpoint when the
// latest is damaged — writes the metrics rows and reaches the held-out loss
// of the run that was never stopped, to the bit.

#include "models/fit.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/io/dir_lock.h"
#include "engine/io/file_io.h"
#include "models/toy/toy_trainer.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::NewTempDir;

using ::testing::HasSubstr;

// Twelve steps of a small toy model with dropout (so that a resume must
// restore the dropout counters too), evaluated every 4.
TrainConfig Small() {
  TrainConfig c;
  c.model = {.vocab = 8, .seq_len = 8, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
             .dropout = 0.1};
  c.run.batch = 8;
  c.run.steps = 12;
  c.run.warmup = 3;
  c.eval_size = 8;
  return c;
}

std::unique_ptr<ToyTrainer> NewTrainer(const TrainConfig& c = Small()) {
  absl::StatusOr<std::unique_ptr<ToyTrainer>> t = ToyTrainer::Create(c);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

FitResult FitOk(Trainer& t, const FitOptions& o) {
  absl::StatusOr<FitResult> r = Fit(t, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : FitResult{};
}

// The rows of two runs are metrics.csv's same text but for the wall clock
// (the rows kept from before a resume are read back from metrics.csv).
void ExpectSameRows(std::vector<MetricsRow> got, std::vector<MetricsRow> want) {
  for (MetricsRow& r : got) r.elapsed = 0;
  for (MetricsRow& r : want) r.elapsed = 0;
  EXPECT_EQ(FormatMetrics(got), FormatMetrics(want));
  EXPECT_EQ(got.size(), want.size());
}

// The run that is never stopped: 3 rows (steps 4, 8, 12).
FitResult Uninterrupted() {
  auto t = NewTrainer();
  return FitOk(*t, {.dir = NewTempDir("fit"), .eval_every = 4});
}

TEST(Fit, TrainsEvaluatesAndCheckpointsEveryEvalEverySteps) {
  const std::string dir = NewTempDir("fit");
  auto t = NewTrainer();
  std::vector<int64_t> rows_seen;
  const FitResult r = FitOk(*t, {.dir = dir, .eval_every = 5, .on_row = [&](const MetricsRow& m) {
                                   rows_seen.push_back(m.step);
                                 }});
  EXPECT_EQ(r.end, FitEnd::kComplete);
  EXPECT_EQ(r.step, 12);
  EXPECT_THAT(rows_seen, ::testing::ElementsAre(5, 10, 12));  // and the last step
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint.prev.safetensors"));
  ASSERT_OK_AND_ASSIGN(const EvalResult again, t->Evaluate());
  EXPECT_EQ(r.final_eval.loss, again.loss);  // the trained model's
}

TEST(Fit, ResumingAfterStopAfterEqualsTheUninterruptedRun) {
  const FitResult want = Uninterrupted();
  const std::string dir = NewTempDir("fit");
  auto first = NewTrainer();
  // stop_after's step is evaluated and saved, as every eval_every-th is:
  // stopping at one of those leaves the rows as they would be.
  const FitResult stopped = FitOk(*first, {.dir = dir, .eval_every = 4, .stop_after = 8});
  EXPECT_EQ(stopped.end, FitEnd::kStopAfter);
  EXPECT_EQ(stopped.step, 8);
  auto second = NewTrainer();
  FitResume from;
  const FitResult rest = FitOk(*second, {.dir = dir, .eval_every = 4, .resume = true,
                                         .on_resume = [&](const FitResume& r) { from = r; }});
  EXPECT_EQ(from.step, 8);
  EXPECT_EQ(from.path, dir + "/checkpoint.safetensors");
  EXPECT_EQ(rest.end, FitEnd::kComplete);
  ExpectSameRows(rest.rows, want.rows);
  EXPECT_EQ(rest.final_eval.loss, want.final_eval.loss);
}

// stop_after between rows writes no row of its own: the steps since the
// last row are saved as a stop's are, and the resumed run's rows are the
// uninterrupted run's.
TEST(Fit, ResumingAfterStopAfterBetweenRowsEqualsTheUninterruptedRun) {
  const FitResult want = Uninterrupted();
  const std::string dir = NewTempDir("fit");
  auto first = NewTrainer();
  const FitResult stopped = FitOk(*first, {.dir = dir, .eval_every = 4, .stop_after = 7});
  EXPECT_EQ(stopped.end, FitEnd::kStopAfter);
  EXPECT_EQ(stopped.step, 7);
  ASSERT_FALSE(stopped.rows.empty());
  EXPECT_EQ(stopped.rows.back().step, 4);
  auto second = NewTrainer();
  const FitResult rest = FitOk(*second, {.dir = dir, .eval_every = 4, .resume = true});
  ASSERT_EQ(rest.end, FitEnd::kComplete);
  ExpectSameRows(rest.rows, want.rows);
  EXPECT_EQ(rest.final_eval.loss, want.final_eval.loss);
}

TEST(Fit, AStopRequestSavesTheOpenWindowAndResumesExactly) {
  const FitResult want = Uninterrupted();
  const std::string dir = NewTempDir("fit");
  auto first = NewTrainer();
  int64_t steps_done = 0;
  const FitResult stopped = FitOk(
      *first, {.dir = dir, .eval_every = 4,
               .stop_requested = [&] { return steps_done >= 7; },  // between rows
               .on_step = [&](const FitProgress& p) { steps_done = p.step.step; }});
  EXPECT_EQ(stopped.end, FitEnd::kStopRequested);
  EXPECT_EQ(stopped.step, 7);
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics_window.csv"));
  auto second = NewTrainer();
  const FitResult rest = FitOk(*second, {.dir = dir, .eval_every = 4, .resume = true});
  ASSERT_EQ(rest.end, FitEnd::kComplete);
  ExpectSameRows(rest.rows, want.rows);  // row 8 averages steps 5-8 across the stop
  EXPECT_EQ(rest.final_eval.loss, want.final_eval.loss);
}

// The run's clock goes on from the stop, not from the last row before it:
// 0.3 s spent between row 4 and the stop at step 7 were lost, and a stop
// before the first row restarted the clock at 0. A window saved before the
// seconds were recorded (five fields) still resumes, from the last row's.
TEST(Fit, AResumedRunsSecondsGoOnFromTheStop) {
  const std::string dir = NewTempDir("fit");
  auto first = NewTrainer();
  int64_t steps_done = 0;
  const FitResult stopped = FitOk(
      *first, {.dir = dir, .eval_every = 4,
               .stop_requested = [&] { return steps_done >= 7; },
               .on_step = [&](const FitProgress& p) {
                 steps_done = p.step.step;
                 if (steps_done == 6) std::this_thread::sleep_for(std::chrono::milliseconds(300));
               }});
  ASSERT_EQ(stopped.step, 7);
  const std::string old_form = NewTempDir("fit_old_window");
  std::filesystem::copy(dir, old_form,
                        std::filesystem::copy_options::recursive |
                            std::filesystem::copy_options::overwrite_existing);
  auto second = NewTrainer();
  const FitResult rest = FitOk(*second, {.dir = dir, .eval_every = 4, .resume = true});
  ASSERT_EQ(rest.rows.size(), 3u);
  EXPECT_LT(rest.rows[0].elapsed, 0.3);
  EXPECT_GE(rest.rows[1].elapsed, 0.3);

  ASSERT_OK_AND_ASSIGN(std::string window, ReadFile(old_form + "/metrics_window.csv"));
  ASSERT_TRUE(absl::StrContains(window, ",elapsed_s\n")) << window;
  window = window.substr(0, window.rfind(','));  // the seconds' field
  window.replace(window.find(",elapsed_s"), 10, "");
  ASSERT_OK(WriteFileAtomically(old_form + "/metrics_window.csv", window + "\n"));
  auto third = NewTrainer();
  const FitResult old = FitOk(*third, {.dir = old_form, .eval_every = 4, .resume = true});
  ASSERT_EQ(old.end, FitEnd::kComplete);
  ExpectSameRows(old.rows, rest.rows);
}

// DamageLatestCheckpoint changes a byte of the latest checkpoint's last
// tensor, which its checksum then refuses.
void DamageLatestCheckpoint(const std::string& dir) {
  std::fstream f(dir + "/checkpoint.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-5, std::ios::end);
  f.put('\x7f');
}

TEST(Fit, ADamagedLatestCheckpointFallsBackToThePreviousOne) {
  const FitResult want = Uninterrupted();
  const std::string dir = NewTempDir("fit");
  auto first = NewTrainer();
  ASSERT_EQ(FitOk(*first, {.dir = dir, .eval_every = 4, .stop_after = 8}).step, 8);
  DamageLatestCheckpoint(dir);  // step 8: the previous one holds step 4
  auto second = NewTrainer();
  FitResume from;
  const FitResult rest = FitOk(*second, {.dir = dir, .eval_every = 4, .resume = true,
                                         .on_resume = [&](const FitResume& r) { from = r; }});
  EXPECT_EQ(from.path, dir + "/checkpoint.prev.safetensors");
  EXPECT_EQ(from.step, 4);
  EXPECT_THAT(from.warning, HasSubstr("resuming from " + dir + "/checkpoint.prev.safetensors"));
  ExpectSameRows(rest.rows, want.rows);
  EXPECT_EQ(rest.final_eval.loss, want.final_eval.loss);
}

// Two stops inside one window (steps 5 and 7), then a resume that falls
// back to the previous checkpoint (step 5): the window saved with it comes
// back with it (metrics_window.prev.csv), so the row at 8 still averages
// steps 5-8. With one window file, step 7's was found, did not match, and
// the row lost steps 5-7.
TEST(Fit, AFallbackToThePreviousCheckpointReopensItsOwnWindow) {
  const FitResult want = Uninterrupted();
  const std::string dir = NewTempDir("fit");
  for (int64_t stop_at : {5, 7}) {
    auto t = NewTrainer();
    int64_t steps_done = 0;
    const FitResult stopped = FitOk(
        *t, {.dir = dir, .eval_every = 4, .resume = stop_at == 7,
             .stop_requested = [&] { return steps_done >= stop_at; },
             .on_step = [&](const FitProgress& p) { steps_done = p.step.step; }});
    ASSERT_EQ(stopped.step, stop_at);
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics_window.prev.csv"));
  DamageLatestCheckpoint(dir);  // step 7: the previous one holds step 5
  auto last = NewTrainer();
  FitResume from;
  const FitResult rest = FitOk(*last, {.dir = dir, .eval_every = 4, .resume = true,
                                       .on_resume = [&](const FitResume& r) { from = r; }});
  EXPECT_EQ(from.step, 5);
  ExpectSameRows(rest.rows, want.rows);
  EXPECT_EQ(rest.final_eval.loss, want.final_eval.loss);
}

TEST(Fit, ResumingUnderAnotherConfigIsRefusedNamingTheField) {
  const std::string dir = NewTempDir("fit");
  auto first = NewTrainer();
  FitOk(*first, {.dir = dir, .eval_every = 4, .stop_after = 4});
  TrainConfig other = Small();
  other.run.lr = 0.5;
  auto second = NewTrainer(other);
  const absl::StatusOr<FitResult> r = Fit(*second, {.dir = dir, .eval_every = 4, .resume = true});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("lr: checkpoint 0.001, this run 0.5"));
}

TEST(Fit, ANonFiniteStepEndsTheRunNamingTheStepAndTheCheckpointKept) {
  TrainConfig diverging = Small();
  diverging.run.lr = 1e30;
  auto t = NewTrainer(diverging);
  const FitResult r = FitOk(*t, {.dir = NewTempDir("fit"), .eval_every = 1});
  ASSERT_EQ(r.end, FitEnd::kNonFinite);
  EXPECT_TRUE(r.every_rank);
  EXPECT_THAT(r.message, HasSubstr(absl::StrCat("step ", r.step + 1)));
  EXPECT_THAT(r.message, ::testing::AnyOf(HasSubstr("keeps step"),
                                          HasSubstr("no checkpoint was written")));
}

TEST(Fit, ARunDirectoryInUseIsRefusedNamingItsHolder) {
  const std::string dir = NewTempDir("fit");
  std::vector<std::string> removed;
  absl::StatusOr<DirectoryLock> held = LockDirectory(dir, &removed);
  ASSERT_TRUE(held.ok()) << held.status();
  auto t = NewTrainer();
  const absl::StatusOr<FitResult> refused = Fit(*t, {.dir = dir});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(),
              HasSubstr(absl::StrCat(dir, " is in use by another writer (pid ", getpid(), ")")));
  EXPECT_EQ(t->step(), 0);
  // The caller that holds the lock says so.
  EXPECT_EQ(FitOk(*t, {.dir = dir, .dir_locked = true, .stop_after = 1}).step, 1);
}

TEST(Fit, ALockFileThatCannotBeOpenedIsNotADirectoryInUse) {
  const std::string dir = NewTempDir("fit");
  std::filesystem::create_directory(dir + "/.lock");
  std::vector<std::string> removed;
  const absl::Status refused = LockDirectory(dir, &removed).status();
  EXPECT_FALSE(refused.ok());
  EXPECT_FALSE(absl::IsUnavailable(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("cannot open the lock file '" + dir + "/.lock'"));
}

TEST(Fit, MakesAMissingRunDirectoryAndRefusesOneItCannotMake) {
  const std::string dir = NewTempDir("fit") + "/runs/first";
  auto t = NewTrainer();
  EXPECT_EQ(FitOk(*t, {.dir = dir, .stop_after = 1}).step, 1);
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics.csv"));
  const std::string file = NewTempDir("fit") + "/a_file";
  std::ofstream(file) << "not a directory";
  auto u = NewTrainer();
  const absl::Status refused = Fit(*u, {.dir = file + "/run"}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(),
              HasSubstr(absl::StrCat("cannot create the run directory '", file, "/run'")));
}

TEST(Fit, BadOptionsAreRefusedNamingTheField) {
  auto t = NewTrainer();
  EXPECT_THAT(Fit(*t, {.dir = NewTempDir("fit"), .eval_every = 0}).status().message(),
              HasSubstr("eval_every must be >= 1, got 0"));
  EXPECT_THAT(Fit(*t, {.dir = NewTempDir("fit"), .stop_after = -1}).status().message(),
              HasSubstr("stop_after must be >= 0, got -1"));
  EXPECT_THAT(Fit(*t, {}).status().message(), HasSubstr("FitOptions::dir"));
  EXPECT_EQ(t->step(), 0);
}

}  // namespace
}  // namespace dagrad::models
