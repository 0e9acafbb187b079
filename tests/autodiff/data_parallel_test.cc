// Data parallelism in one process (ops/autodiff/data_parallel.h): the
// buckets, the plan's order (each bucket's sum starts inside backward), the
// DOT style, and dropout's slice offset. With the single-process
// communicator every sum is the identity, so a bucketed training step must
// equal the plain one bit for bit. The sums over ranks are in tests/mpi/.

#include <algorithm>
#include <cstring>

#include "engine/dot/dot.h"
#include "engine/executor.h"
#include "engine/philox.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/data_parallel.h"
#include "ops/autodiff/optimizer.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/math/dropout_math.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

using ::testing::HasSubstr;
using testing::AsDoubles;
using testing::Random;

// Net: three parameters of 15, 7 and 40 elements (62 in all), loss a sum
// of squares through them.
struct Net {
  Graph g;
  Value x, w1, w2, w3, loss;
  Net() {
    x = g.Input("x", DType::kFloat32, {2, 5});
    w1 = g.Parameter("w1", {3, 5}, Initializer::Uniform(-1, 1));
    w2 = g.Parameter("w2", {7}, Initializer::Uniform(-1, 1));
    w3 = g.Parameter("w3", {40}, Initializer::Uniform(-1, 1));
    Value h = Tanh(Linear(x, w1));  // (2, 3)
    loss = Sum(h * h) + Sum(w2 * w2) * Sum(Tanh(w3));
  }
};

Tensor Batch() { return *Tensor::FromVector<float>({2, 5}, {1, -2, 3, 0.5, -1, 2, 1, -1, 0, 4}); }

// 16 float32 elements a bucket: w3 (40) spans three buckets and the others
// are split between them: ceil(62 / 16) = 4 buckets.
TEST(DataParallel, BucketsSplitParametersAndSpanLargeOnes) {
  Net n;
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(n.loss, {n.w1, n.w2, n.w3}));
  int buckets = 0;
  ASSERT_OK_AND_ASSIGN(std::vector<Value> reduced,
                       ReduceGradients(grads, {.communicator = SingleProcessCommunicator(),
                                               .bucket_bytes = 16 * 4},
                                       &buckets));
  EXPECT_EQ(buckets, 4);
  Executor exec(n.g);
  std::vector<Value> fetches = grads;
  fetches.insert(fetches.end(), reduced.begin(), reduced.end());
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exec.Run(*plan, {{n.x, Batch()}}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(out[i].shape(), out[i + 3].shape());
    for (int64_t k = 0; k < out[i].num_elements(); ++k) {
      EXPECT_EQ(out[i].data<float>()[k], out[i + 3].data<float>()[k]) << i << " " << k;
    }
  }
}

TEST(DataParallel, BadBucketSizeIsAnError) {
  Net n;
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(n.loss, {n.w1}));
  EXPECT_STATUS(
      ReduceGradients(grads, {.communicator = SingleProcessCommunicator(), .bucket_bytes = 0})
          .status(),
      absl::StatusCode::kInvalidArgument, "data parallel: bucket_bytes must be >= 1, got 0");
}

// One Adam step with clipping, bucketed (overlapped or not) and plain: the
// same parameters, bit for bit.
TEST(DataParallel, BucketedStepEqualsPlainStep) {
  std::vector<std::vector<float>> results;
  for (int mode = 0; mode < 3; ++mode) {
    Net n;
    OptimizerOptions o{.kind = OptimizerKind::kAdam, .clip_norm = 0.5, .skip_nonfinite = true};
    if (mode > 0) {
      o.data_parallel = {.communicator = SingleProcessCommunicator(), .bucket_bytes = 24,
                         .overlap = mode == 1};
    }
    ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(n.loss, n.g.Parameters(), o));
    Executor exec(n.g, {.communicator = o.data_parallel.communicator});
    ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({n.loss}, ts.updates));
    for (int step = 1; step <= 3; ++step) {
      ASSERT_OK(exec.Run(*plan, {{n.x, Batch()}, {ts.lr, Tensor::Scalar<double>(0.1)},
                                 {ts.step, Tensor::Scalar<double>(step)}})
                    .status());
    }
    std::vector<float> params;
    for (const Value& p : n.g.Parameters()) {
      ASSERT_OK_AND_ASSIGN(Tensor t, exec.Read(p));
      params.insert(params.end(), t.data<float>(), t.data<float>() + t.num_elements());
    }
    results.push_back(params);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

// The first bucket's sum starts before backward is done (the planner runs
// the early start op as soon as its gradients exist), and the collectives
// are drawn in a style of their own, in the legend.
TEST(DataParallel, SumsStartInsideBackwardAndAreDrawn) {
  Net n;
  ASSERT_OK_AND_ASSIGN(TrainingStep ts,
                       BuildTrainingStep(n.loss, n.g.Parameters(),
                                         {.clip_norm = 1.0,
                                          .data_parallel = {.communicator =
                                                                SingleProcessCommunicator(),
                                                            .bucket_bytes = 64}}));
  ASSERT_OK_AND_ASSIGN(ExecutionPlan plan, PlanGraph(n.g, {n.loss}, ts.updates));
  int first_start = -1, last_gradient = -1;
  for (int i = 0; i < static_cast<int>(plan.steps.size()); ++i) {
    const Node& node = n.g.node(plan.steps[i]);
    if (node.op->name == "all_reduce_start" && first_start < 0) first_start = i;
    if (node.role == NodeRole::kGradient) last_gradient = i;
  }
  ASSERT_GE(first_start, 0);
  EXPECT_LT(first_start, last_gradient);
  ASSERT_OK_AND_ASSIGN(std::string dot, ToDot(n.g, ts.updates));
  EXPECT_THAT(dot, HasSubstr("AllReduceStart"));
  EXPECT_THAT(dot, HasSubstr("collective (all-reduce)"));
  EXPECT_THAT(dot, HasSubstr("shape=parallelogram"));
}

// DropoutOf runs Dropout(p = 0.5) in training mode at step 7 over x, as
// rows [batch_begin, batch_begin + rows) of a global batch. Each call
// builds the same graph, so the dropout node, and its stream, is the same.
std::vector<double> DropoutOf(const Tensor& x, int64_t batch_begin) {
  Graph g;
  Value in = g.Input("x", x.dtype(), x.shape());
  Value y = Dropout(in, 0.5);
  Executor exec(g);
  auto plan = exec.Compile({y});
  EXPECT_TRUE(plan.ok());
  auto out = exec.Run(**plan, {{in, x}},
                      {.training = true, .step = 7, .batch_begin = batch_begin,
                       .batch_rows = batch_begin == 0 ? 0 : x.shape()[0]});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? AsDoubles((*out)[0]) : std::vector<double>();
}

// Rank r's dropout over its rows equals those rows of one process's
// dropout over the whole batch: the counter is offset by the slice's start
// (3 rows of 15 elements: 45, not a multiple of Philox's 4 words).
TEST(DataParallel, DropoutOfASliceIsThatSliceOfTheWholeBatch) {
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    const Tensor whole = Random(d, {6, 3, 5}, 1, 1.0, 2.0);
    ASSERT_OK_AND_ASSIGN(Tensor part, Tensor::Zeros(d, {2, 3, 5}));
    std::memcpy(part.raw_data(), static_cast<const char*>(whole.raw_data()) + 45 * SizeOf(d),
                part.nbytes());
    const std::vector<double> full = DropoutOf(whole, 0), sliced = DropoutOf(part, 3);
    ASSERT_EQ(sliced.size(), 30u);
    int dropped = 0;
    for (int i = 0; i < 30; ++i) {
      EXPECT_EQ(full[45 + i], sliced[i]) << i;
      dropped += sliced[i] == 0;
    }
    EXPECT_GT(dropped, 0);
    EXPECT_LT(dropped, 30);
  }
}

// A slice whose elements cross 2^34 (Philox block 2^32, where the low word
// of the block number wraps) draws each element's own word, as the CUDA
// kernel and RandomStream::Bits define it: one philox_bits call over the
// wrap drew block 0's words for blocks 2^32 on.
TEST(DataParallel, DropoutAcrossTheBlockNumbersWrapDrawsEachElementsWord) {
  Graph g;
  Value in = g.Input("x", DType::kFloat32, {64, 4});
  Value y = Dropout(in, 0.5);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  // Rows of 4 from row 2^32 - 5: elements from 2^34 - 20, blocks from
  // 2^32 - 5, not a multiple of a vector's lanes.
  const int64_t batch_begin = (int64_t{1} << 32) - 5;
  ASSERT_OK_AND_ASSIGN(
      auto out, exec.Run(*plan, {{in, testing::T<float>({64, 4}, std::vector<float>(256, 1.0f))}},
                         {.training = true, .step = 7, .batch_begin = batch_begin,
                          .batch_rows = 64}));
  const uint64_t first = (uint64_t{1} << 34) - 20;
  const RandomStream rs{.seed = 0, .stream = static_cast<uint32_t>(y.id()), .step = 7};
  int differ = 0;
  for (int64_t i = 0; i < 256; ++i) {
    const float want = DropoutElement(1.0f, rs.Bits(first + i), DropoutThreshold(0.5), 2.0f);
    differ += out[0].data<float>()[i] != want;
  }
  EXPECT_EQ(differ, 0);
}

}  // namespace
}  // namespace dagrad
