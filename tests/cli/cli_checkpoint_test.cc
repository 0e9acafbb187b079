// `dagrad train` and its checkpoints, run as a user runs it: a damaged or
// missing latest checkpoint falls back to the previous one and the run
// ends as an uninterrupted one; both damaged is a clear error; one trainer
// per --out; temporary files of killed runs removed; a resume whose flags
// contradict the checkpoint lists every difference; a complete run says so.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Damage writes `bytes` over `path` in place, as a failing disk would.
void Damage(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string StepOf(const std::string& checkpoint) {
  absl::StatusOr<SafetensorsFile> f = ReadCheckpoint(checkpoint);
  if (!f.ok()) return std::string(f.status().message());
  return f->metadata["dagrad.step"];
}

// A run stopped at step 10 saved at steps 5 and 10 (--eval_every=5).
std::string StoppedAtTen(const std::string& name) {
  const std::string dir = FreshDir(name);
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=10"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(StepOf(dir + "/checkpoint.safetensors"), "10");
  EXPECT_EQ(StepOf(dir + "/checkpoint.prev.safetensors"), "5");
  return dir;
}

TEST(CliCheckpoint, ADamagedLatestCheckpointFallsBackToThePreviousOne) {
  const std::string whole = FreshDir("ckpt_whole");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", whole)).code, 0);
  struct Case {
    std::string name, why;
    std::function<std::string(const std::string&)> damage;  // bytes -> damaged bytes
  };
  const std::vector<Case> cases = {
      {"data_byte", "data fails its checksum",
       [](std::string b) {
         b[b.size() - 3] ^= 0x04;
         return b;
       }},
      {"header_value",
       "the header (tensor names, dtypes, shapes or metadata) fails its "
       "checksum",
       [](std::string b) {
         b[b.find("\"dagrad.step\":\"10\"") + 15] = '9';  // step 10 -> 90
         return b;
       }},
      // The checksum key's name and a data byte: the file must not read as
      // one without checksums, loading the damaged data.
      {"checksum_key_and_data", "the checksums 'dagrad.crc32c' are missing",
       [](std::string b) {
         b[b.find(kChecksumKey) + 7] ^= 0x01;  // dagrad.crc32c -> dagrad.brc32c
         b[b.size() - 3] ^= 0x04;
         return b;
       }},
      {"tensor_name", "the header (tensor names, dtypes, shapes or metadata) fails",
       [](std::string b) {
         b[b.find("\"embedding.weight\"") + 1] ^= 0x01;
         return b;
       }},
      {"truncated", "runs past the end", [](std::string b) { return b.substr(0, 100); }},
      {"missing", "cannot open", [](std::string) { return std::string(); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = StoppedAtTen("ckpt_fallback_" + c.name);
    const std::string latest = dir + "/checkpoint.safetensors";
    const std::string previous = dir + "/checkpoint.prev.safetensors";
    if (c.name == "missing") {
      fs::remove(latest);  // a crash between the two renames of a save
    } else {
      Damage(latest, c.damage(*ReadFile(latest)));
    }
    CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume --stop_after=10"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr(latest));
    EXPECT_THAT(r.err, HasSubstr(c.why));
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("; resuming from ", previous, " at step 5\n")));
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("resumed from ", previous, " at step 5\n")));
    // The damaged file was replaced, not kept as the previous checkpoint.
    EXPECT_EQ(StepOf(latest), "10");
    EXPECT_EQ(StepOf(previous), "5");

    r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("resumed from ", latest, " at step 10\n")));
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(MetricsWithoutTime(dir), MetricsWithoutTime(whole));
    EXPECT_EQ(*ReadFile(dir + "/model.safetensors"), *ReadFile(whole + "/model.safetensors"));
  }
}

TEST(CliCheckpoint, BothCheckpointsDamagedIsAClearError) {
  const std::string dir = StoppedAtTen("ckpt_both");
  for (const char* name : {"/checkpoint.safetensors", "/checkpoint.prev.safetensors"}) {
    std::string bytes = *ReadFile(dir + name);
    bytes[bytes.size() - 1] ^= 0x01;
    Damage(dir + name, bytes);
  }
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("damaged checkpoint '", dir,
                                            "/checkpoint.safetensors': tensor '")));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("; and the previous checkpoint: damaged checkpoint '",
                                            dir, "/checkpoint.prev.safetensors': tensor '")));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Without --resume or --overwrite, a stopped run's directory was taken
// over by a fresh run: its checkpoints were gone.
TEST(CliCheckpoint, AFreshRunIntoAnEarlierRunIsRefusedWithoutOverwrite) {
  const std::string dir = StoppedAtTen("ckpt_refused");
  ASSERT_OK_AND_ASSIGN(const std::string before, ReadFile(dir + "/checkpoint.safetensors"));
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("'", dir, "' holds an earlier run (", dir,
                                            "/checkpoint.safetensors): continue it with --resume, "
                                            "or replace its files with --overwrite")));
  EXPECT_EQ(*ReadFile(dir + "/checkpoint.safetensors"), before);
  EXPECT_EQ(StepOf(dir + "/checkpoint.safetensors"), "10");
  const CliResult both = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume --overwrite"));
  EXPECT_EQ(both.code, 2);
  EXPECT_THAT(both.err, HasSubstr("--resume continues the directory's run and --overwrite replaces it"));
}

TEST(CliCheckpoint, AFreshRunDropsAnEarlierRunsPreviousCheckpoint) {
  const std::string dir = StoppedAtTen("ckpt_fresh");
  const CliResult r =
      RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5 --overwrite"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(StepOf(dir + "/checkpoint.safetensors"), "5");
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.prev.safetensors"));
}

// --overwrite replaces every file of the earlier run at the new run's
// first save: its model.safetensors, pictures and graphs stayed beside the
// new run's checkpoint, and `dagrad eval` read the replaced run's weights.
TEST(CliCheckpoint, AFreshRunReplacesEveryFileOfTheEarlierRun) {
  const std::string dir = FreshDir("ckpt_replaced");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir)).code, 0);
  ASSERT_TRUE(fs::exists(dir + "/model.safetensors"));
  const CliResult r =
      RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5 --overwrite --dim=8"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(StepOf(dir + "/checkpoint.safetensors"), "5");
  std::vector<std::string> left;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".lock", "checkpoint.safetensors", "metrics.csv"}));
}

// A fresh run refused at its first save (it diverged) left the earlier
// run's checkpoint beside its own metrics.csv, and a resume then dropped
// the earlier run's rows. Now the earlier run is gone whole: no checkpoint
// is left to resume from.
TEST(CliCheckpoint, AFreshRunThatDivergesAtItsFirstSaveLeavesNoMixedDirectory) {
  const std::string dir = StoppedAtTen("ckpt_diverged");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir,
                                             " --overwrite --lr=1e6 --warmup=0 --clip=0 --eval_every=10"));
  ASSERT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("step 10: not writing"));
  EXPECT_THAT(r.err, HasSubstr("no checkpoint was written"));
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.prev.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/metrics_window.csv"));
}

// --steps=0 listed checkpoint.safetensors and metrics.csv as written, and
// wrote neither (over an earlier run, that run's stayed).
TEST(CliCheckpoint, ARunOfNoStepsSavesItsInitialState) {
  const std::string dir = StoppedAtTen("ckpt_no_steps");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --steps=0 --overwrite"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("checkpoint.safetensors metrics.csv"));
  EXPECT_EQ(StepOf(dir + "/checkpoint.safetensors"), "0");
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.prev.safetensors"));
  EXPECT_EQ(*ReadFile(dir + "/metrics.csv"),
            "step,loss,train_accuracy,eval_loss,eval_accuracy,lr,skipped,elapsed_s\n");
  const CliResult again = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --steps=0 --resume"));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing to train"));
}

// A damaged metrics file named neither its folder nor that the checkpoint
// was sound.
TEST(CliCheckpoint, ADamagedMetricsFileIsNamedWithItsFolder) {
  const std::string dir = FreshDir("ckpt_metrics");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=12")).code, 0);
  ASSERT_OK_AND_ASSIGN(const std::string window, ReadFile(dir + "/metrics_window.csv"));
  Damage(dir + "/metrics_window.csv", "x");
  CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("'", dir, "/metrics_window.csv': malformed (not a metrics "
                                            "window) (the checkpoint loaded; resuming continues "
                                            "this file's rows)")));
  Damage(dir + "/metrics_window.csv", window);
  std::ofstream(dir + "/metrics.csv", std::ios::app) << "garbage\n";
  r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("'", dir, "/metrics.csv': line 4 is malformed")));
}

// SGD's momentum and nesterov were not recorded: a resume under another
// momentum went ahead. They are flags now, and refused for Adam.
TEST(CliCheckpoint, AResumeUnderAnotherMomentumIsRefused) {
  const std::string dir = FreshDir("ckpt_momentum");
  const std::string sgd = absl::StrCat(kTinyTrain, "--optimizer=sgd --lr=0.1 --out=", dir);
  ASSERT_EQ(RunDagrad(sgd + " --momentum=0.8 --stop_after=5").code, 0);
  const CliResult r = RunDagrad(sgd + " --momentum=0.5 --nesterov --resume");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("(2 differences): momentum: checkpoint 0.8, this run 0.5; nesterov: "
                               "checkpoint 0, this run 1\n"));
  EXPECT_EQ(RunDagrad(sgd + " --momentum=0.8 --resume").code, 0);
  const CliResult adam = RunDagrad(absl::StrCat(kTinyTrain, "--momentum=0.5 --out=", dir, "_adam"));
  EXPECT_EQ(adam.code, 2);
  EXPECT_THAT(adam.err, HasSubstr("--momentum"));
}

TEST(CliCheckpoint, ASecondTrainerOnOneOutIsRefusedNamingTheFirst) {
  const std::string dir = FreshDir("ckpt_lock");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd =
        absl::StrCat("exec ", DAGRAD_CLI_PATH, " ", kTinyTrain,
                     "--steps=100000000 --eval_every=1000 --out=", dir, " > /dev/null 2>&1");
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // The lock file holds the first trainer's pid once it holds the lock.
  const std::string holder = absl::StrCat(pid, "\n");
  for (int wait = 0; wait < 6000 && ReadFile(dir + "/.lock").value_or("") != holder; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ReadFile(dir + "/.lock").value_or(""), holder);
  const CliResult second = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(second.code, 2);
  EXPECT_EQ(second.err,
            absl::StrCat("dagrad train: --out=", dir, " is in use by another dagrad train (pid ",
                         pid, "); wait for it to end or choose another --out\n"));
  // The lock died with its process: the next trainer goes ahead.
  const CliResult third = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5"));
  EXPECT_EQ(third.code, 0) << third.err;
}

// Progress into a file (a batch job's log) arrives line by line while the
// run goes on, so a run killed mid-way leaves its lines there.
TEST(CliCheckpoint, ProgressReachesALogFileWhileTheRunGoesOn) {
  const std::string dir = FreshDir("ckpt_log");
  const std::string log = FreshDir("ckpt_log_file") + "/train.log";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd =
        absl::StrCat("exec ", DAGRAD_CLI_PATH, " ", kTinyTrain,
                     "--steps=100000000 --eval_every=300 --out=", dir, " > ", log, " 2>&1");
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Read once, just after the first evaluation's row: a few hundred bytes
  // by then, less than the 4 KiB stdio would have held back.
  for (int wait = 0; wait < 6000; ++wait) {
    if (absl::StrContains(ReadFile(dir + "/metrics.csv").value_or(""), "\n300,")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string text = ReadFile(log).value_or("");
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_THAT(text, HasSubstr("training on cpu"));
  EXPECT_THAT(text, HasSubstr("step 300/100000000"));
}

TEST(CliCheckpoint, TemporaryFilesOfKilledRunsAreRemovedAtStart) {
  const std::string dir = FreshDir("ckpt_stale");
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  const std::string stale = absl::StrCat("checkpoint.safetensors.tmp.", dead, ".3");
  const std::string live = absl::StrCat("metrics.csv.tmp.", getpid(), ".0");  // this process
  Damage(dir + "/" + stale, "half a checkpoint");
  Damage(dir + "/" + live, "a write under way");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(
      r.out, HasSubstr(absl::StrCat("removed what a killed run left in ", dir, ": ", stale, "\n")));
  EXPECT_FALSE(fs::exists(dir + "/" + stale));
  EXPECT_TRUE(fs::exists(dir + "/" + live));
}

TEST(CliCheckpoint, AResumeListsEveryFlagThatContradictsTheCheckpoint) {
  const std::string dir = FreshDir("ckpt_config");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5")).code, 0);
  const CliResult r =
      RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir,
                             " --resume --dim=32 --lr=0.5 --seed=3 --label_smoothing=0.1 "
                             "--precision=bf16"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("the checkpoint was made with another config (5 differences): "
                               "dim: checkpoint 16, this run 32; label_smoothing: checkpoint 0, "
                               "this run 0.1; lr: checkpoint 0.001, this run 0.5; precision: "
                               "checkpoint fp32, this run bf16; seed: checkpoint 0, this run 3\n"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A checkpoint written before dagrad recorded the optimizer's betas, eps
// and decay resumes when this run has the values every such run had, and
// the refusal of another value says so.
TEST(CliCheckpoint, ACheckpointFromBeforeTheOptimizerSettingsWereRecordedResumes) {
  const std::string dir = FreshDir("ckpt_unrecorded");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --stop_after=5")).code, 0);
  const std::string path = dir + "/checkpoint.safetensors";
  ASSERT_OK_AND_ASSIGN(SafetensorsFile old, ReadCheckpoint(path));
  for (const char* key : {"beta1", "beta2", "eps", "lr_decay", "label_smoothing", "precision"}) {
    ASSERT_EQ(old.metadata.erase(key), 1u) << key;
  }
  ASSERT_OK(WriteCheckpoint(path, std::move(old)));
  const CliResult other = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume --beta1=0.8"));
  EXPECT_EQ(other.code, 2);
  EXPECT_THAT(other.err, HasSubstr("(1 difference): beta1: checkpoint (none: written before "
                                   "dagrad recorded it, when it was 0.9), this run 0.8\n"));
  const CliResult same = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(StepOf(path), "20");
}

TEST(CliCheckpoint, ResumingACompleteRunSaysThereIsNothingToTrain) {
  const std::string dir = FreshDir("ckpt_complete");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir)).code, 0);
  const std::string model = *ReadFile(dir + "/model.safetensors");
  const std::string metrics = MetricsWithoutTime(dir);
  fs::remove(dir + "/model.safetensors");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", dir, " --resume"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("checkpoint is at step 20 of 20: nothing to train (the run "
                               "is complete); writing its outputs again\n"));
  EXPECT_EQ(*ReadFile(dir + "/model.safetensors"), model);
  EXPECT_EQ(MetricsWithoutTime(dir), metrics);
}

}  // namespace
}  // namespace dagrad::testing
