// The CUDA backend against the CPU backend (DESIGN.md's third oracle).
//
// Each op against the CPU is an op case's cuda mode (tests/autodiff/op_case_test.cc).
// Here: needs no GPU, the exact comparison (the kernel-table coverage test,
// which reads the op cases, is tests/autodiff/cuda_coverage_test.cc); needs a GPU, and skips saying why without one, errors found
// on the device reported exactly as the CPU reports them, and whole
// training steps of the toy transformer.

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_device.h"
#include "models/toy/toy_trainer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/softmax.h"
#include "tests/autodiff/support/backend_check.h"
#include "tests/support/gpu_skip.h"
#include "tests/support/test_util.h"
#include "tests/models/support/toy_step.h"

#ifdef DAGRAD_WITH_CUDA
#include "engine/cuda/cublas_api.h"
#include "engine/cuda/kernel_registry.h"
#endif

namespace dagrad::testing {
namespace {

TEST(CudaDevice, IsUnavailableOrNamesItsGpu) {
  absl::StatusOr<std::unique_ptr<Device>> gpu = CudaDevice();
  if (!gpu.ok()) {
    EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnavailable) << gpu.status();
    EXPECT_FALSE(gpu.status().message().empty());
    EXPECT_TRUE(CudaDeviceNames().empty() || CudaBuiltIn());
    return;
  }
  EXPECT_EQ((*gpu)->name().rfind("cuda:0 (", 0), 0u) << (*gpu)->name();
  EXPECT_FALSE((*gpu)->is_host());
  EXPECT_FALSE(CudaDeviceNames().empty());
}

TEST(CudaDevice, DescribeSaysWhetherItIsBuiltIn) {
  const std::string line = DescribeCuda();
  if (CudaBuiltIn()) {
    EXPECT_EQ(line.rfind("built in", 0), 0u) << line;
  } else {
    EXPECT_EQ(line, "not built into this binary");
  }
}

// ---- needs no GPU ----------------------------------------------------------------

TEST(CudaLibraries, CublasLoadsAtRunTime) {
#ifdef DAGRAD_WITH_CUDA
  absl::StatusOr<const CublasApi*> blas = LoadCublas();
  ASSERT_TRUE(blas.ok()) << blas.status();
  EXPECT_STREQ((*blas)->status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
#else
  GTEST_SKIP() << "built without the CUDA backend (DAGRAD_CUDA=OFF or no nvcc)";
#endif
}

// The exact comparison that the dropout cases rely on: -0.0 is not +0.0,
// but NaNs match whatever their payload (x86 keeps an input NaN's bits,
// and gives 0xffc00000 for inf * 0, where CUDA gives 0x7fffffff).
TEST(CudaCompare, ExactSeesSignedZerosButNotNaNPayloads) {
  const float x86_nan = std::bit_cast<float>(0xffc00000u);
  const float cuda_nan = std::bit_cast<float>(0x7fffffffu);
  EXPECT_TRUE(
      CompareTensors(T<float>({2}, {x86_nan, 1}), T<float>({2}, {cuda_nan, 1}), 0, true).ok());
  EXPECT_FALSE(CompareTensors(T<float>({2}, {-0.0f, 1}), T<float>({2}, {0.0f, 1}), 0, true).ok());
  EXPECT_FALSE(CompareTensors(T<float>({1}, {x86_nan}), T<float>({1}, {0.0f}), 0, true).ok());
  EXPECT_TRUE(CompareTensors(T<double>({1}, {-0.0}), T<double>({1}, {0.0}), 0, false).ok());
}

// A gradient zero in exact arithmetic (a bias constant along a softmax
// row) is compared with the scale of the terms that cancel, the scores'
// gradient: noise of 1e-7 of that scale passes, 1e-3 of it does not, and
// without `cancelling` the noise is measured against noise and fails.
TEST(CudaCompare, CancellingGradientsUseTheTermsScale) {
  CrossCase c{.name = "row_bias", .build = [](CaseBuilder& b) {
                const Value scores = b.Float("scores", {2, 3, 4});
                b.Out(MaskedSoftmax(scores, {.bias = b.Float("bias", {2, 3, 1})}));
              }};
  ASSERT_OK_AND_ASSIGN(BuiltCase b, BuildCase(c));
  Executor cpu(*b.graph);
  ASSERT_OK_AND_ASSIGN(auto plan, cpu.Compile(b.fetches));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, cpu.Run(*plan, b.builder->MakeFeeds(1)));
  ASSERT_EQ(b.wrt, (std::vector<std::string>{"", "scores", "bias"}));
  double terms = 0;
  for (float v : want[1].ToVector<float>()) terms = std::max(terms, std::abs(double{v}));
  const auto noisy = [&](double noise) {
    std::vector<Tensor> got = want;
    got[2] = T<float>({2, 3, 1}, std::vector<float>(6, static_cast<float>(noise * terms)));
    return got;
  };
  EXPECT_FALSE(CompareFetches(c, b, want, noisy(1e-7)).ok());
  c.cancelling = {{.input = "bias", .terms = "scores"}};
  EXPECT_TRUE(CompareFetches(c, b, want, noisy(1e-7)).ok());
  EXPECT_FALSE(CompareFetches(c, b, want, noisy(1e-3)).ok());
}

// ---- the device keeps working after a data error -----------------------------------

TEST(CudaErrors, ARunAfterAFailedRunSucceeds) {
  SKIP_WITHOUT_GPU();
  Graph g;
  Value x = g.Input("x", DType::kInt32, {4});
  Value d = g.Input("d", DType::kInt32, {4});
  Value q = Div(x, d);
  Executor exec(g, *CudaDevice());
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({q}));
  const Tensor xs = T<int32_t>({4}, {8, 9, 10, 11});
  EXPECT_STATUS(exec.Run(*plan, {{x, xs}, {d, T<int32_t>({4}, {1, 0, 2, 0})}}).status(),
                absl::StatusCode::kInvalidArgument, "integer division by zero (divisor element 1)");
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, xs}, {d, T<int32_t>({4}, {1, 3, 2, 4})}}));
  EXPECT_EQ(out[0].ToVector<int32_t>(), (std::vector<int32_t>{8, 3, 5, 2}));
}

TEST(CudaErrors, SynchronizeEachKernelNamesTheNode) {
  SKIP_WITHOUT_GPU();
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  Value y = Cast(x, DType::kInt32);
  ExecutorOptions options;
  options.synchronize_each_kernel = true;
  Executor exec(g, *CudaDevice(), options);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_STATUS(exec.Run(*plan, {{x, T<float>({3}, {1, NAN, 2})}}).status(),
                absl::StatusCode::kInvalidArgument, "cast 'cast': cannot cast nan (element 1)");
}

// ---- a whole training step ---------------------------------------------------------

// A two-layer toy transformer (E 32, H 4, ffn 64, dropout 0.1) on sequences
// of 3 to 8 tokens.
absl::StatusOr<std::unique_ptr<ToyStep>> SmallToyStep() {
  return ToyStep::Create({.vocab = 16, .seq_len = 8, .dim = 32, .heads = 4, .layers = 2,
                          .ffn = 64, .dropout = 0.1},
                         /*min_len=*/3, /*data_seed=*/7);
}

// WithoutKeyBias returns an attention layer's in_proj_bias (3E: the
// queries', keys' and values' biases) with the keys' block zeroed, and any
// other parameter unchanged. The keys' bias adds q·b_k to every score of a
// query's row, which the softmax ignores: its gradient is zero in exact
// arithmetic, a sum of terms that cancel, and each backend returns rounding
// noise. Adam divides that noise by its own root mean square, moving the
// block by up to lr per step in either direction, so the block is compared
// through its gradients (with the whole tensor's scale: the terms that
// cancel are of the size of the other blocks' sums) rather than after Adam.
Tensor WithoutKeyBias(const Value& param, Tensor t) {
  if (!absl::EndsWith(param.path(), "in_proj_bias")) return t;
  const int64_t e = t.num_elements() / 3;
  std::fill(t.data<float>() + e, t.data<float>() + 2 * e, 0.0f);
  return t;
}

// Three Adam steps of a small toy transformer with dropout and clipping:
// the losses and every gradient at each step, and every parameter after
// them (but the keys' biases: WithoutKeyBias), CPU against CUDA.
TEST(CudaTraining, ToyTransformerStepsMatchCpu) {
  SKIP_WITHOUT_GPU();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ToyStep> t, SmallToyStep());
  const TrainingStep& ts = t->ts;
  std::vector<Value> fetches = {t->loss};
  fetches.insert(fetches.end(), ts.grads.begin(), ts.grads.end());
  ExecutorOptions options;
  options.seed = 11;
  options.poison_arena = true;
  Executor cpu(t->graph, options);
  Executor gpu(t->graph, *CudaDevice(), options);
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, cpu.Compile(fetches, ts.updates));
  ASSERT_OK_AND_ASSIGN(auto gpu_plan, gpu.Compile(fetches, ts.updates));
  for (int step = 1; step <= 3; ++step) {
    const Feeds feeds = t->FeedsFor(step, 1e-3);
    const RunOptions ro{.training = true, .step = static_cast<uint64_t>(step)};
    ASSERT_OK_AND_ASSIGN(auto want, cpu.Run(*cpu_plan, feeds, ro));
    ASSERT_OK_AND_ASSIGN(auto got, gpu.Run(*gpu_plan, feeds, ro));
    for (size_t i = 0; i < fetches.size(); ++i) {
      const absl::Status st = CompareTensors(want[i], got[i], 1e-4, false);
      ASSERT_TRUE(st.ok()) << "step " << step << ", "
                           << (i == 0 ? "loss" : "gradient of " + ts.params[i - 1].path()) << ": "
                           << st;
    }
  }
  for (const Value& p : t->model->parameters()) {
    ASSERT_OK_AND_ASSIGN(Tensor want, cpu.Read(p));
    ASSERT_OK_AND_ASSIGN(Tensor got, gpu.Read(p));
    const absl::Status st =
        CompareTensors(WithoutKeyBias(p, want), WithoutKeyBias(p, got), 1e-4, false);
    EXPECT_TRUE(st.ok()) << p.path() << ": " << st;
  }
}

// Recorded steps (a CUDA graph recorded at step 2, replayed after) against
// steps queued kernel by kernel on the same GPU: the same bits, since the
// kernels are the same; a replay that kept the first step's dropout mask,
// feeds or learning rate would differ from the second step on.
TEST(CudaTraining, RecordedStepsMatchUnrecordedStepsBitForBit) {
  SKIP_WITHOUT_GPU();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ToyStep> t, SmallToyStep());
  const Value loss = t->loss;
  const TrainingStep& ts = t->ts;
  ExecutorOptions recorded_options{.seed = 11};
  ExecutorOptions queued_options = recorded_options;
  queued_options.record_runs = false;
  Executor recorded(t->graph, *CudaDevice(), recorded_options);
  Executor queued(t->graph, *CudaDevice(), queued_options);
  ASSERT_OK_AND_ASSIGN(auto recorded_plan, recorded.Compile({loss}, ts.updates));
  ASSERT_OK_AND_ASSIGN(auto queued_plan, queued.Compile({loss}, ts.updates));
  for (int step = 1; step <= 5; ++step) {
    const Feeds feeds = t->FeedsFor(step, 1e-3 * step);
    const RunOptions ro{.training = true, .step = static_cast<uint64_t>(step)};
    ASSERT_OK_AND_ASSIGN(auto want, queued.Run(*queued_plan, feeds, ro));
    ASSERT_OK_AND_ASSIGN(auto got, recorded.Run(*recorded_plan, feeds, ro));
    const absl::Status st = CompareTensors(want[0], got[0], 0, true);
    ASSERT_TRUE(st.ok()) << "loss at step " << step << ": " << st;
  }
  EXPECT_TRUE(recorded_plan->recording_failure().ok()) << recorded_plan->recording_failure();
  EXPECT_EQ(recorded_plan->replays(), 3);
  EXPECT_EQ(queued_plan->replays(), 0);
  for (const Value& p : t->model->parameters()) {
    ASSERT_OK_AND_ASSIGN(Tensor want, queued.Read(p));
    ASSERT_OK_AND_ASSIGN(Tensor got, recorded.Read(p));
    const absl::Status st = CompareTensors(want, got, 0, true);
    EXPECT_TRUE(st.ok()) << p.path() << ": " << st;
  }
}

// The check: 100 steps of the toy trainer (the README's model and
// task) give the CPU's losses within 1e-4 on the GPU.
TEST(CudaTraining, HundredTrainerStepsMatchCpuLosses) {
  SKIP_WITHOUT_GPU();
  models::TrainConfig config;
  config.model = {.vocab = 16, .seq_len = 32, .dim = 128, .heads = 4, .layers = 2,
                  .ffn = 512, .dropout = 0.1};
  config.run.steps = 100;
  config.eval_size = 8;
  ASSERT_OK_AND_ASSIGN(auto cpu, models::ToyTrainer::Create(config));
  ASSERT_OK_AND_ASSIGN(auto gpu, models::ToyTrainer::Create(config, *CudaDevice()));
  for (int step = 1; step <= 100; ++step) {
    ASSERT_OK_AND_ASSIGN(models::StepResult want, cpu->Step());
    ASSERT_OK_AND_ASSIGN(models::StepResult got, gpu->Step());
    ASSERT_NEAR(got.loss, want.loss, 1e-4 * std::max(1.0, std::abs(want.loss)))
        << "step " << step;
  }
  EXPECT_EQ(gpu->train_plan().replays(), 98);
}

// A replayed run that meets a bad index reports it against its node, as
// the CPU does, and the device keeps working.
TEST(CudaErrors, AReplayedRunReportsADataErrorAgainstItsNode) {
  SKIP_WITHOUT_GPU();
  Graph g;
  Value table = g.Parameter("table", {4, 2}, Initializer::Ones());
  Value ids = g.Input("ids", DType::kInt64, {3});
  Value y = Sum(Embedding(table, ids));
  Executor exec(g, *CudaDevice());
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  const Tensor good = T<int64_t>({3}, {0, 3, 1});
  const Tensor bad = T<int64_t>({3}, {0, 9, 1});
  ASSERT_OK(exec.Run(*plan, {{ids, good}}).status());  // warm-up
  ASSERT_OK(exec.Run(*plan, {{ids, good}}).status());  // recorded
  const absl::Status replayed = exec.Run(*plan, {{ids, bad}}).status();
  EXPECT_EQ(plan->replays(), 1);
  EXPECT_EQ(replayed, RunOnce(g, {y}, {{ids, bad}}).status());
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{ids, good}}));
  ExpectAllClose(out[0], {6}, 0, 0, "sum after the failed replay");
}

}  // namespace
}  // namespace dagrad::testing
