// Replicas on threads (engine/device/thread_communicator.h): two toy
// trainers, each on half the batch and one thread of its own, summing
// their gradients, train as one trainer on the whole batch does, step for
// step, up to the sums' rounding.

#include <cmath>
#include <vector>

#include "engine/device/thread_communicator.h"
#include "models/fit.h"
#include "models/toy/toy_trainer.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

TrainConfig ReplicaConfig() {
  return {.model = {.vocab = 8, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1, .ffn = 32,
                    .dropout = 0.0},
          .run = {.batch = 8, .steps = 5, .lr = 1e-2, .warmup = 1},
          .eval_size = 8};
}

std::vector<StepResult> Steps(Trainer& t, int n) {
  std::vector<StepResult> out;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<StepResult> r = t.Step();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) break;
    out.push_back(*r);
  }
  return out;
}

TEST(ThreadReplicas, TwoReplicasTrainAsOneTrainerOnTheWholeBatch) {
  ASSERT_OK_AND_ASSIGN(auto alone, ToyTrainer::Create(ReplicaConfig()));
  const std::vector<StepResult> want = Steps(*alone, 5);
  std::vector<std::vector<StepResult>> got(2);
  OnThreadRanks(2, [&](std::shared_ptr<Communicator> rank) {
    const int r = rank->rank();
    absl::StatusOr<std::unique_ptr<ToyTrainer>> t =
        ToyTrainer::Create(ReplicaConfig(), CpuDevice(), {.communicator = std::move(rank)});
    ASSERT_TRUE(t.ok()) << t.status();
    got[r] = Steps(**t, 5);
  });
  ASSERT_EQ(want.size(), 5u);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(got[r].size(), 5u) << "rank " << r;
    for (int s = 0; s < 5; ++s) {
      EXPECT_EQ(got[r][s].loss, got[0][s].loss) << "the ranks agree, step " << s + 1;
      EXPECT_NEAR(got[r][s].loss, want[s].loss, 1e-5 * std::abs(want[s].loss)) << "step " << s + 1;
      EXPECT_NEAR(got[r][s].grad_norm, want[s].grad_norm, 1e-4 * want[s].grad_norm)
          << "step " << s + 1;
      EXPECT_EQ(got[r][s].accuracy, want[s].accuracy) << "step " << s + 1;
    }
  }
  EXPECT_NE(want[4].loss, want[0].loss);  // it trained
}

// A replica that leaves the job is an error naming it for the others, not
// a non-finite step (Fit read every Aborted step as one).
TEST(ThreadReplicas, AReplicaThatLeftIsAnErrorNotANonFiniteStop) {
  absl::StatusOr<FitResult> fit;
  OnThreadRanks(2, [&](std::shared_ptr<Communicator> rank) {
    const int r = rank->rank();
    absl::StatusOr<std::unique_ptr<ToyTrainer>> t =
        ToyTrainer::Create(ReplicaConfig(), CpuDevice(), {.communicator = std::move(rank)});
    ASSERT_TRUE(t.ok()) << t.status();
    if (r == 1) {  // trains two steps, then leaves: its trainer and communicator go
      EXPECT_TRUE(Fit(**t, {.eval_every = 5, .stop_after = 2, .writer = false}).ok());
      return;
    }
    fit = Fit(**t, {.dir = testing::NewTempDir("replica_left"), .eval_every = 5});
  });
  ASSERT_FALSE(fit.ok()) << "ended " << static_cast<int>(fit->end) << ": " << fit->message;
  EXPECT_STATUS(fit.status(), absl::StatusCode::kAborted,
                "rank 1 of 2 threads left the job before this collective");
}

}  // namespace
}  // namespace dagrad::models
