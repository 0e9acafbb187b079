// The values the examples of the training headers (ops/autodiff/, the
// executor's training loop) promise: the examples themselves run as
// HeaderExample.ops_autodiff_* and engine_executor_*, extracted from the
// headers; these check what a step of them gives.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/device/communicator.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/data_parallel.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

constexpr int64_t B = 2, T = 3, E = 4, V = 5;

// A loss over embedded tokens, as the training examples have one.
struct TinyModel {
  Graph g;
  Value tokens = g.Input("tokens", DType::kInt64, {B, T});
  Value table = g.Parameter("table", {V, E}, Initializer::Normal(0.0, 0.1).WithSeed(1));
  Value w = g.Parameter("w", {V, E}, Initializer::XavierUniform());
  Value logits = Linear(Tanh(Reshape(Embedding(table, tokens), {B * T, E})), w);
  Value loss = CrossEntropy(logits, Reshape(tokens, {B * T}));
  Tensor batch = *Tensor::FromVector<int64_t>({B, T}, {0, 1, 2, 3, 4, 0});
};

TEST(DocumentedValues, AStepOfAdamWWithClipping) {
  TinyModel m;
  Executor exec(m.g);
  ASSERT_OK_AND_ASSIGN(TrainingStep ts,
      BuildTrainingStep(m.loss, m.g.Parameters(), {.kind = OptimizerKind::kAdamW,
                                                   .weight_decay = 0.01, .clip_norm = 1.0,
                                                   .skip_nonfinite = true}));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({m.loss, ts.grad_norm}, ts.updates));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{m.tokens, m.batch},
      {ts.lr, Tensor::Scalar(0.01)}, {ts.step, Tensor::Scalar(1.0)}}, {.training = true}));
  EXPECT_GT(out[0].data<float>()[0], 0);
  EXPECT_GT(out[1].data<double>()[0], 0.0);
  EXPECT_FALSE(UpdateSkipped(out[0].data<float>()[0], out[1].data<double>()[0]));
  EXPECT_EQ(DecayMatrices(m.g.Parameters(), 0.1).size(), 2u);
}

TEST(DocumentedValues, SgdStepsMoveTheWeights) {
  TinyModel m;
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(m.loss, {m.w}));
  Value velocity = m.g.Variable("velocity", m.w.shape(), Initializer::Zeros());
  Value update = SgdUpdate(m.w, grads[0], velocity, m.g.Constant(Tensor::Scalar(0.1)), {});
  Executor exec(m.g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({m.loss}, {update}));
  ASSERT_OK_AND_ASSIGN(Tensor before, exec.Read(m.w));
  for (uint64_t step = 0; step < 2; ++step) {
    ASSERT_OK(exec.Run(*plan, {{m.tokens, m.batch}}, {.training = true, .step = step}).status());
  }
  ASSERT_OK_AND_ASSIGN(Tensor after, exec.Read(m.w));
  EXPECT_NE(after.ToVector<float>(), before.ToVector<float>());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, exec.ReadAll(m.g.Variables()));
  EXPECT_EQ(values.size(), 3u);  // table, w, velocity
  EXPECT_EQ(values[1].ToVector<float>(), after.ToVector<float>());
}

TEST(DocumentedValues, LearningRates) {
  LrSchedule warm_cosine{.peak = 6e-4, .warmup_steps = 100, .total_steps = 2000,
                         .final_fraction = 0.1};
  LrSchedule nanogpt{.custom = [](int64_t s) { return 6e-4 * std::min<double>(s, 101) / 101; }};
  ASSERT_OK_AND_ASSIGN(const double first, LearningRate(warm_cosine, 1));
  EXPECT_DOUBLE_EQ(first, 6e-4 / 100);
  ASSERT_OK_AND_ASSIGN(const double custom, LearningRate(nanogpt, 1));
  EXPECT_DOUBLE_EQ(custom, 6e-4 / 101);  // nanoGPT's get_lr(0)
}

TEST(DocumentedValues, OneProcessDataParallelism) {
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  Value w = g.Parameter("w", {3}, Initializer::Ones());
  Value loss = Sum(x * w);
  ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(loss, g.Parameters(),
      {.data_parallel = {.communicator = comm, .bucket_bytes = 1 << 20}}));
  EXPECT_EQ(ts.num_buckets, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, {w}));
  ASSERT_OK_AND_ASSIGN(std::vector<Value> global,
      ReduceGradients(grads, {.communicator = comm, .bucket_bytes = 1 << 20}));
  EXPECT_EQ(global[0].shape(), w.shape());
}

}  // namespace
}  // namespace dagrad
