// Recorded runs (ExecutorOptions::record_runs): on a device that can, the
// executor queues a plan's first run as it is (a warm-up), records the
// second, and replays the recording on later runs.
//
// The CUDA device records CUDA graphs; these tests check the executor's
// side of the contract on any machine, with a host-memory device that
// records by keeping the executor's kernel loop and replays by calling it
// again. Replays must then give what unrecorded runs give, which holds only
// if everything a recorded kernel reads lives in buffers that stay put
// (staged feeds, variables, the arena) or in the plan's run context (the
// dropout step), never in one run's stack frame (ASan checks that in CI).

#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "ops/gather.h"
#include "ops/reduce.h"
#include "tests/support/host_memory_device.h"
#include "tests/support/test_util.h"
#include "tests/models/support/toy_step.h"

namespace dagrad::testing {
namespace {

// ReplayingHostDevice keeps its buffers in host memory but says it is not
// the host, so the executor stages feeds into its own buffers as it does
// for a GPU. It records by keeping `enqueue`, or refuses to with `refusal`.
class ReplayingHostDevice final : public HostMemoryDevice {
 public:
  explicit ReplayingHostDevice(absl::Status refusal = absl::OkStatus())
      : refusal_(std::move(refusal)) {}

  std::string name() const override { return "replaying host"; }

  absl::StatusOr<std::unique_ptr<Recording>> Record(const std::function<absl::Status()>& enqueue,
                                                    absl::Status* why_not) override {
    ++*records_;
    if (absl::Status queued = enqueue(); !queued.ok()) return queued;
    if (!refusal_.ok()) {
      *why_not = refusal_;
      return nullptr;
    }
    return std::make_unique<Replayer>(enqueue);
  }

  // records counts calls of Record; it outlives the device, which the
  // executor owns.
  std::shared_ptr<int> records() const { return records_; }

 private:
  class Replayer final : public Recording {
   public:
    explicit Replayer(std::function<absl::Status()> enqueue) : enqueue_(std::move(enqueue)) {}
    absl::Status Replay() override { return enqueue_(); }

   private:
    std::function<absl::Status()> enqueue_;
  };

  absl::Status refusal_;
  std::shared_ptr<int> records_ = std::make_shared<int>(0);
};

// A small toy transformer's Adam step with dropout and clipping, on the
// CPU and on a replaying device, fed the same batches.
struct TwoExecutors {
  explicit TwoExecutors(ExecutorOptions options = {}, absl::Status refusal = absl::OkStatus()) {
    const models::ToyConfig config{.vocab = 12, .seq_len = 8, .dim = 16, .heads = 2,
                                   .layers = 1, .ffn = 32, .dropout = 0.2};
    step = *ToyStep::Create(config, /*min_len=*/2, /*data_seed=*/5);
    options.seed = 3;
    auto device = std::make_unique<ReplayingHostDevice>(std::move(refusal));
    records = device->records();
    cpu = std::make_unique<Executor>(step->graph, options);
    replaying = std::make_unique<Executor>(step->graph, std::move(device), options);
  }

  Feeds FeedsFor(int n) const { return step->FeedsFor(n, 1e-2); }

  std::unique_ptr<ToyStep> step;
  std::unique_ptr<Executor> cpu, replaying;
  std::shared_ptr<int> records;
};

void ExpectSameParameters(TwoExecutors& t) {
  for (const Value& p : t.step->model->parameters()) {
    ASSERT_OK_AND_ASSIGN(Tensor want, t.cpu->Read(p));
    ASSERT_OK_AND_ASSIGN(Tensor got, t.replaying->Read(p));
    ExpectAllClose(got, AsDoubles(want), 0, 0, p.path());
  }
}

TEST(RecordedRuns, TrainingStepsReplayWithNewFeedsAndDropoutMasks) {
  TwoExecutors t;
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, t.cpu->Compile({t.step->loss}, t.step->ts.updates));
  ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}, t.step->ts.updates));
  std::vector<float> losses;
  for (int step = 1; step <= 6; ++step) {
    const Feeds feeds = t.FeedsFor(step);
    const RunOptions ro{.training = true, .step = static_cast<uint64_t>(step)};
    ASSERT_OK_AND_ASSIGN(auto want, t.cpu->Run(*cpu_plan, feeds, ro));
    ASSERT_OK_AND_ASSIGN(auto got, t.replaying->Run(*plan, feeds, ro));
    ExpectAllClose(got[0], AsDoubles(want[0]), 0, 0, absl::StrCat("loss, step ", step));
    losses.push_back(got[0].data<float>()[0]);
  }
  EXPECT_EQ(*t.records, 2);  // the updates are recorded apart (executor.h)
  EXPECT_EQ(plan->replays(), 4);
  EXPECT_TRUE(plan->recording_failure().ok()) << plan->recording_failure();
  // A replay that reused the first run's feeds or mask would repeat a loss.
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_NE(losses[i], losses[i - 1]) << i;
  ExpectSameParameters(t);
}

TEST(RecordedRuns, TrainingAndEvaluationEachHaveTheirRecording) {
  TwoExecutors t;
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, t.cpu->Compile({t.step->loss}));
  ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}));
  for (int step = 1; step <= 6; ++step) {
    const Feeds feeds = t.FeedsFor(step);
    const RunOptions ro{.training = step % 2 == 0, .step = static_cast<uint64_t>(step)};
    ASSERT_OK_AND_ASSIGN(auto want, t.cpu->Run(*cpu_plan, feeds, ro));
    ASSERT_OK_AND_ASSIGN(auto got, t.replaying->Run(*plan, feeds, ro));
    ExpectAllClose(got[0], AsDoubles(want[0]), 0, 0, absl::StrCat("loss, step ", step));
  }
  EXPECT_EQ(*t.records, 2);
  EXPECT_EQ(plan->replays(), 2);
}

TEST(RecordedRuns, ReplaysSeeAssignedVariables) {
  TwoExecutors t;
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, t.cpu->Compile({t.step->loss}));
  ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}));
  const Feeds feeds = t.FeedsFor(1);
  ASSERT_OK(t.replaying->Run(*plan, feeds).status());  // warm-up
  ASSERT_OK(t.replaying->Run(*plan, feeds).status());  // recorded
  const Value table = t.step->model->parameters().front();
  ASSERT_OK_AND_ASSIGN(Tensor ones, Tensor::Zeros(table.dtype(), table.shape()));
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.data<float>()[i] = 1;
  ASSERT_OK(t.cpu->Assign(table, ones));
  ASSERT_OK(t.replaying->Assign(table, ones));
  ASSERT_OK_AND_ASSIGN(auto want, t.cpu->Run(*cpu_plan, feeds));
  ASSERT_OK_AND_ASSIGN(auto got, t.replaying->Run(*plan, feeds));
  EXPECT_EQ(plan->replays(), 1);
  ExpectAllClose(got[0], AsDoubles(want[0]), 0, 0, "loss after Assign");
}

// Dropout's element offset (the batch rows of a data-parallel run) is a
// kernel argument that a CUDA graph bakes in: other rows need a new
// recording, not a replay.
TEST(RecordedRuns, OtherBatchRowsAreRecordedAgain) {
  TwoExecutors t;
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, t.cpu->Compile({t.step->loss}));
  ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}));
  const Feeds feeds = t.FeedsFor(1);
  const int64_t rows = feeds.front().second.shape()[0];
  for (int64_t begin : {0, 0, 0, 1, 1}) {
    const RunOptions ro{.training = true, .step = 1, .batch_begin = begin * rows,
                        .batch_rows = rows};
    ASSERT_OK_AND_ASSIGN(auto want, t.cpu->Run(*cpu_plan, feeds, ro));
    ASSERT_OK_AND_ASSIGN(auto got, t.replaying->Run(*plan, feeds, ro));
    ExpectAllClose(got[0], AsDoubles(want[0]), 0, 0, absl::StrCat("loss, rows from ", begin));
  }
  EXPECT_EQ(*t.records, 2);  // rows from 0, then from `rows`
  EXPECT_EQ(plan->replays(), 2);
}

TEST(RecordedRuns, PoisonedArenaIsRewrittenByEveryReplay) {
  ExecutorOptions options;
  options.poison_arena = true;
  TwoExecutors t(options);
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, t.cpu->Compile({t.step->loss}, t.step->ts.updates));
  ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}, t.step->ts.updates));
  for (int step = 1; step <= 4; ++step) {
    const RunOptions ro{.training = true, .step = static_cast<uint64_t>(step)};
    ASSERT_OK_AND_ASSIGN(auto want, t.cpu->Run(*cpu_plan, t.FeedsFor(step), ro));
    ASSERT_OK_AND_ASSIGN(auto got, t.replaying->Run(*plan, t.FeedsFor(step), ro));
    ExpectAllClose(got[0], AsDoubles(want[0]), 0, 0, absl::StrCat("loss, step ", step));
  }
  EXPECT_EQ(plan->replays(), 2);
  ExpectSameParameters(t);
}

TEST(RecordedRuns, OptionsThatNeedTheHostBetweenKernelsTurnRecordingOff) {
  for (const char* which : {"profile", "check_numerics", "synchronize_each_kernel", "off"}) {
    ExecutorOptions options;
    const std::string w = which;
    options.profile = w == "profile";
    options.check_numerics = w == "check_numerics";
    options.synchronize_each_kernel = w == "synchronize_each_kernel";
    options.record_runs = w != "off";
    TwoExecutors t(options);
    ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}));
    for (int step = 1; step <= 3; ++step) {
      ASSERT_OK(t.replaying->Run(*plan, t.FeedsFor(step)).status());
    }
    EXPECT_EQ(*t.records, 0) << which;
    EXPECT_EQ(plan->replays(), 0) << which;
  }
}

TEST(RecordedRuns, ADeviceThatCannotRecordRunsUnrecordedAndSaysWhy) {
  TwoExecutors t({}, absl::FailedPreconditionError("capture refused"));
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, t.cpu->Compile({t.step->loss}, t.step->ts.updates));
  ASSERT_OK_AND_ASSIGN(auto plan, t.replaying->Compile({t.step->loss}, t.step->ts.updates));
  for (int step = 1; step <= 3; ++step) {
    const RunOptions ro{.training = true, .step = static_cast<uint64_t>(step)};
    ASSERT_OK_AND_ASSIGN(auto want, t.cpu->Run(*cpu_plan, t.FeedsFor(step), ro));
    ASSERT_OK_AND_ASSIGN(auto got, t.replaying->Run(*plan, t.FeedsFor(step), ro));
    ExpectAllClose(got[0], AsDoubles(want[0]), 0, 0, absl::StrCat("loss, step ", step));
  }
  EXPECT_EQ(*t.records, 1);  // asked once, not every run
  EXPECT_EQ(plan->replays(), 0);
  EXPECT_STATUS(plan->recording_failure(), absl::StatusCode::kFailedPrecondition,
                "capture refused");
  ExpectSameParameters(t);
}

// A data error in the run being recorded fails that run and records
// nothing; the next good run records; a replay that meets bad data fails
// with the same message, and the one after it succeeds.
TEST(RecordedRuns, DataErrorsAreReportedWhetherRecordingOrReplaying) {
  Graph g;
  Value table = g.Parameter("table", {4, 2}, Initializer::Ones());
  Value ids = g.Input("ids", DType::kInt64, {3});
  Value y = Sum(Embedding(table, ids));
  auto device = std::make_unique<ReplayingHostDevice>();
  std::shared_ptr<int> records = device->records();
  Executor exec(g, std::move(device));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  const Tensor bad = T<int64_t>({3}, {0, 9, 1});
  const Tensor good = T<int64_t>({3}, {0, 3, 1});
  ASSERT_OK(exec.Run(*plan, {{ids, good}}).status());  // warm-up
  EXPECT_EQ(*records, 0);
  EXPECT_STATUS(exec.Run(*plan, {{ids, bad}}).status(), absl::StatusCode::kInvalidArgument,
                "= 9 is out of range");
  EXPECT_EQ(*records, 1);
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{ids, good}}));
  ExpectAllClose(out[0], {6}, 0, 0, "sum of three rows of ones");
  EXPECT_EQ(*records, 2);
  EXPECT_STATUS(exec.Run(*plan, {{ids, bad}}).status(), absl::StatusCode::kInvalidArgument,
                "= 9 is out of range");
  ASSERT_OK_AND_ASSIGN(out, exec.Run(*plan, {{ids, good}}));
  ExpectAllClose(out[0], {6}, 0, 0, "sum after a failed replay");
  EXPECT_EQ(*records, 2);
  EXPECT_EQ(plan->replays(), 2);
}

}  // namespace
}  // namespace dagrad::testing
