// `dagrad train --replicas=N`: N replicas on threads of one process, each
// on its share of the batch, train as one replica does (up to the gradient
// sums' rounding), write their files once, resume, and refuse what they
// cannot do.

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/io/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

// LastRow is metrics.csv's last row's values: step, loss, train accuracy,
// eval loss, ...
std::vector<double> LastRow(const std::string& dir) {
  absl::StatusOr<std::string> csv = ReadFile(dir + "/metrics.csv");
  EXPECT_TRUE(csv.ok()) << csv.status();
  if (!csv.ok()) return {};
  std::vector<std::string> lines = absl::StrSplit(*csv, '\n', absl::SkipEmpty());
  std::vector<double> row;
  for (const absl::string_view field : absl::StrSplit(lines.back(), ',')) {
    double v = 0;
    EXPECT_TRUE(absl::SimpleAtod(field, &v)) << field;
    row.push_back(v);
  }
  return row;
}

TEST(CliReplicas, TwoReplicasTrainAsOneDoes) {
  const std::string one = FreshDir("replicas_one"), two = FreshDir("replicas_two");
  const std::string flags = absl::StrCat(kTinyTrain, "--dropout=0 ");
  const CliResult alone = RunDagrad(absl::StrCat(flags, "--out=", one));
  ASSERT_EQ(alone.code, 0) << alone.err;
  const CliResult replicas = RunDagrad(absl::StrCat(flags, "--replicas=2 --out=", two));
  ASSERT_EQ(replicas.code, 0) << replicas.err;
  EXPECT_THAT(replicas.out, HasSubstr(", threads (2 ranks)\n"));
  const std::vector<double> want = LastRow(one), got = LastRow(two);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GE(want.size(), 4u);
  EXPECT_EQ(got[0], 20);
  EXPECT_EQ(want[0], 20);
  EXPECT_NEAR(got[1], want[1], 1e-4 * want[1]) << "training loss at step 20";
  EXPECT_NEAR(got[3], want[3], 1e-4 * want[3]) << "held-out loss at step 20";
  EXPECT_TRUE(ReadFile(two + "/model.safetensors").ok());
}

TEST(CliReplicas, ReplicasResumeTheirCheckpoint) {
  const std::string dir = FreshDir("replicas_resume");
  const std::string flags = absl::StrCat(kTinyTrain, "--replicas=2 --out=", dir);
  const CliResult first = RunDagrad(absl::StrCat(flags, " --stop_after=5"));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("stopped after step 5; continue with --resume"));
  const CliResult rest = RunDagrad(absl::StrCat(flags, " --resume"));
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_EQ(LastRow(dir).at(0), 20);
}

// A stop signal stops every replica at the same step, the writer saves
// that step's checkpoint, and the run resumes from it to the end.
TEST(CliReplicas, ASignalStopsEveryReplicaAtOneStepAndTheRunResumes) {
  const std::string dir = FreshDir("replicas_signal");
  const std::string flags = absl::StrCat(kTinyTrain, "--replicas=2 --out=", dir);
  const CliResult stopped = RunDagrad(flags, "env DAGRAD_TEST_RAISE=INT@step:3");
  ASSERT_EQ(stopped.code, 130) << stopped.err;
  EXPECT_THAT(stopped.err, HasSubstr("SIGINT: stopped at step 3; resume with --resume"));
  const CliResult rest = RunDagrad(absl::StrCat(flags, " --resume"));
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_THAT(rest.out, HasSubstr("resumed from"));
  EXPECT_EQ(LastRow(dir).at(0), 20);
}

// A non-finite step stops every replica; the writer, which kept the
// checkpoint, says so once (each replica said it, the others "no checkpoint
// was written").
TEST(CliReplicas, ANonFiniteStopIsReportedOnceByTheWriter) {
  const std::string dir = FreshDir("replicas_nonfinite");
  const CliResult r = RunDagrad(absl::StrCat(
      "train --dim=16 --layers=1 --heads=2 --ffn=32 --seq_len=8 --batch=8 --steps=40 "
      "--eval_every=5 --warmup=8 --threads=1 --optimizer=sgd --clip=0 --lr=1e2 --replicas=2 "
      "--out=", dir));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("dagrad train: replica 0 of 2: step "));
  EXPECT_THAT(r.err, HasSubstr(dir + "/checkpoint.safetensors keeps step "));
  EXPECT_EQ(r.err.find("replica 1 of 2"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no checkpoint was written"), std::string::npos) << r.err;
}

TEST(CliReplicas, WhatReplicasCannotDoIsRefused) {
  const CliResult zero = RunDagrad(absl::StrCat(kTinyTrain, "--replicas=0"));
  EXPECT_EQ(zero.code, 2);
  EXPECT_THAT(zero.err, HasSubstr("--replicas must be in [1, "));
  const CliResult threads = RunDagrad("train --steps=1 --replicas=2 --threads=2");
  EXPECT_EQ(threads.code, 2);
  EXPECT_THAT(threads.err, HasSubstr("--replicas computes each replica on one thread"));
  const CliResult device = RunDagrad("train --steps=1 --replicas=2 --device=cuda");
  EXPECT_EQ(device.code, 2);
  EXPECT_THAT(device.err, HasSubstr("--replicas trains on the CPU"));
  const CliResult batch = RunDagrad(
      absl::StrCat(kTinyTrain, "--batch=7 --replicas=2 --out=", FreshDir("replicas_batch")));
  EXPECT_NE(batch.code, 0);
  EXPECT_THAT(batch.err, HasSubstr("replica 0 of 2"));
  EXPECT_THAT(batch.err, HasSubstr("7"));
}

TEST(CliReplicas, AFlagEveryReplicaRefusesIsReportedOnce) {
  const CliResult r = RunDagrad(
      absl::StrCat(kTinyTrain, "--task=nope --replicas=2 --out=", FreshDir("replicas_task")));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("dagrad train: replica 0 of 2: --task: "));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("replica 1 of 2"))) << r.err;
}

}  // namespace
}  // namespace dagrad::testing
