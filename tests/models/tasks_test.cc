// Synthetic task generators: each task's target rule, padding, lengths,
// determinism, and held-out sets disjoint in seed; a data-parallel rank's
// share of a batch (models::BatchShare).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "models/toy/tasks.h"
#include "models/toy/toy_trainer.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using models::Task;
using models::TaskGenerator;

void CheckBatch(Task task, const models::TaskBatch& b, int64_t vocab, int64_t min_len) {
  const int64_t B = b.tokens.shape()[0], T = b.tokens.shape()[1];
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = b.lengths.data<int64_t>()[r];
    ASSERT_GE(len, min_len);
    ASSERT_LE(len, T);
    const int64_t* tok = b.tokens.data<int64_t>() + r * T;
    const int64_t* tgt = b.targets.data<int64_t>() + r * T;
    std::vector<int64_t> valid(tok, tok + len);
    std::vector<int64_t> sorted = valid;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < T; ++i) {
      if (i >= len) {
        EXPECT_EQ(tok[i], 0);
        EXPECT_EQ(tgt[i], -100);
        continue;
      }
      EXPECT_GE(tok[i], 1);
      EXPECT_LT(tok[i], vocab);
      const int64_t want = task == Task::kReverse ? tok[len - 1 - i]
                           : task == Task::kCopy  ? tok[i]
                                                  : sorted[i];
      EXPECT_EQ(tgt[i], want) << "row " << r << " position " << i;
    }
  }
}

TEST(Tasks, EachTaskFollowsItsRule) {
  for (Task task : {Task::kReverse, Task::kCopy, Task::kSort}) {
    ASSERT_OK_AND_ASSIGN(TaskGenerator gen,
                         TaskGenerator::Create({.task = task, .vocab = 7, .seq_len = 9,
                                                .min_len = 3},
                                               42));
    CheckBatch(task, gen.Batch(5, 64).value(), 7, 3);
  }
}

TEST(Tasks, HandWorkedReverse) {
  ASSERT_OK_AND_ASSIGN(TaskGenerator gen,
                       TaskGenerator::Create({.task = Task::kReverse, .vocab = 100, .seq_len = 4}, 1));
  const models::TaskBatch b = gen.Batch(0, 1).value();
  const auto tok = b.tokens.ToVector<int64_t>();
  EXPECT_EQ(b.targets.ToVector<int64_t>(), (std::vector<int64_t>{tok[3], tok[2], tok[1], tok[0]}));
  EXPECT_EQ(b.lengths.ToVector<int64_t>(), std::vector<int64_t>{4});
}

TEST(Tasks, VariableLengthsCoverTheRange) {
  ASSERT_OK_AND_ASSIGN(TaskGenerator gen,
                       TaskGenerator::Create({.vocab = 5, .seq_len = 6, .min_len = 2}, 3));
  const auto lengths = gen.Batch(0, 2000).value().lengths.ToVector<int64_t>();
  for (int64_t len = 2; len <= 6; ++len) {
    const auto n = std::count(lengths.begin(), lengths.end(), len);
    EXPECT_GT(n, 300) << "length " << len;  // ~400 expected each
  }
}

TEST(Tasks, DeterministicPerIndexAndSeed) {
  ASSERT_OK_AND_ASSIGN(TaskGenerator a, TaskGenerator::Create({}, 9));
  ASSERT_OK_AND_ASSIGN(TaskGenerator b, TaskGenerator::Create({}, 9));
  ASSERT_OK_AND_ASSIGN(TaskGenerator eval, TaskGenerator::Create({}, models::EvalSeed(9)));
  EXPECT_EQ(a.Batch(17, 8).value().tokens.ToVector<int64_t>(), b.Batch(17, 8).value().tokens.ToVector<int64_t>());
  EXPECT_NE(a.Batch(17, 8).value().tokens.ToVector<int64_t>(), a.Batch(18, 8).value().tokens.ToVector<int64_t>());
  EXPECT_NE(a.Batch(0, 8).value().tokens.ToVector<int64_t>(), eval.Batch(0, 8).value().tokens.ToVector<int64_t>());
}

TEST(Tasks, ConfigErrors) {
  EXPECT_STATUS(TaskGenerator::Create({.vocab = 1}, 0).status(),
                absl::StatusCode::kInvalidArgument, "vocab must be >= 2");
  EXPECT_STATUS(TaskGenerator::Create({.seq_len = 0}, 0).status(),
                absl::StatusCode::kInvalidArgument, "seq_len must be >= 1");
  EXPECT_STATUS(TaskGenerator::Create({.seq_len = 4, .min_len = 5}, 0).status(),
                absl::StatusCode::kInvalidArgument, "min_len must be in [1, seq_len=4]");
  EXPECT_STATUS(models::ParseTask("shuffle").status(), absl::StatusCode::kInvalidArgument,
                "unknown task 'shuffle'");
}

// Rank 1 of a job of 2 whose other rank holds the same values: a sum over
// the ranks doubles a float64 buffer (all BatchShare sums).
class SecondOfTwoRanks final : public Communicator {
 public:
  int rank() const override { return 1; }
  int size() const override { return 2; }
  std::string name() const override { return "rank 1 of 2 (test)"; }
  absl::Status AllReduceSum(const ReduceBuffer& b) override {
    double* d = static_cast<double*>(b.data);
    for (int64_t i = 0; i < b.count; ++i) d[i] *= 2;
    return absl::OkStatus();
  }
  absl::Status StartAllReduceSum(const ReduceBuffer& b) override { return AllReduceSum(b); }
  absl::Status WaitAllReduce(void*) override { return absl::OkStatus(); }
  absl::Status Broadcast(void*, int64_t, int) override { return absl::OkStatus(); }
  [[noreturn]] void Abort(int code) override { std::exit(code); }
};

// Rank 1 of 2 on a global batch of 4 rows trains rows 2 and 3: its dropout
// counters start 2 rows in, its loss weight counts the global batch's 7
// targets (one is ignored), and its accuracy counts are summed over the
// ranks in the graph.
TEST(BatchShare, RankTrainsItsRowsOfTheGlobalBatch) {
  auto comm = std::make_shared<SecondOfTwoRanks>();
  ASSERT_OK_AND_ASSIGN(models::BatchShare share,
                       models::BatchShare::Create(4, {.communicator = comm}));
  const Tensor global = T<int64_t>({4, 2}, {0, 1, 1, 0, 1, 0, 1, -100});
  ASSERT_OK_AND_ASSIGN(Tensor mine, share.Rows(global));
  EXPECT_EQ(mine.shape(), Shape({2, 2}));
  EXPECT_EQ(AsDoubles(mine), std::vector<double>({1, 0, 1, -100}));
  const RunOptions run = share.Training(7);
  EXPECT_TRUE(run.training);
  EXPECT_EQ(run.step, 7u);
  EXPECT_EQ(run.batch_begin, 2);
  EXPECT_EQ(run.batch_rows, 2);
  Graph g;
  Value logits = g.Input("logits", DType::kFloat32, {2, 2, 2});
  Value targets = g.Input("targets", DType::kInt64, {2, 2});
  Value loss = share.MeanLoss(g, logits, targets);
  ASSERT_OK(loss.status());
  Feeds feeds;
  share.FeedWeight(global, feeds);
  ASSERT_EQ(feeds.size(), 1u);
  EXPECT_FLOAT_EQ(feeds[0].second.data<float>()[0], 1.0f / 7);
  // Every row predicts class 1: right for 2 of this rank's 3 targets, and
  // as often on the other rank (this communicator's), so 4 of 6.
  Executor exec(g, {.communicator = comm});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({share.Counts(logits, targets)}));
  ASSERT_OK_AND_ASSIGN(
      auto out, exec.Run(*plan, {{logits, T<float>({2, 2, 2}, {0, 1, 0, 1, 0, 1, 0, 1})},
                                 {targets, mine}}));
  EXPECT_EQ(AsDoubles(out[0]), std::vector<double>({4, 6}));
}

TEST(BatchShare, BatchTheRanksDoNotDivideIsAnError) {
  auto comm = std::make_shared<SecondOfTwoRanks>();
  EXPECT_STATUS(models::BatchShare::Create(5, {.communicator = comm}).status(),
                absl::StatusCode::kInvalidArgument, "5 does not split evenly over 2 ranks");
  ASSERT_OK_AND_ASSIGN(models::BatchShare alone, models::BatchShare::Create(5, {}));
  EXPECT_EQ(alone.rows(), 5);
  EXPECT_EQ(alone.Training(1).batch_begin, 0);
}

}  // namespace
}  // namespace dagrad::testing
