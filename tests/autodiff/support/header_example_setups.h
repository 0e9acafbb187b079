// The setups the examples of the engine's and the ops' headers run in
// (tests/support/header_examples.h says how): what an example uses and does
// not declare. Default is a small model: a graph `g` with inputs, parameters,
// a loss and an update, an executor and a compiled plan with its feeds. The
// others derive from it, or stand alone, where an example needs a name to
// mean something else (`x` a float array in a kernel's loop) or a file on
// disk; a block names them on its first line ("// setup: Files").
// The setups' nodes are named "setup_*", so that an example may declare
// its own "x".

#ifndef DAGRAD_TESTS_AUTODIFF_SUPPORT_HEADER_EXAMPLE_SETUPS_H_
#define DAGRAD_TESTS_AUTODIFF_SUPPORT_HEADER_EXAMPLE_SETUPS_H_

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/communicator.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/philox.h"
#include "engine/plan/memory_budget.h"
#include "engine/plan/planner.h"
#include "engine/status_macros.h"
#include "engine/plan/internal/plan_memory.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/collective.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/cpu_threads.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tests/support/header_examples.h"

namespace dagrad::examples {

// Sizes as the headers' comments name them: batch, time, keys, embedding,
// heads, vocabulary, features.
constexpr int64_t B = 2, T = 4, S = 6, E = 8, H = 2, V = 5, F = 6;

inline Tensor Filled(const Shape& shape, float value) {
  return *Tensor::FromVector<float>(shape, std::vector<float>(shape.num_elements(), value));
}

// A token model (embedding, a head, cross-entropy), the values the ops'
// examples take as a model has them, and what runs them.
struct Default {
  Graph g;
  Value x = g.Input("setup_x", DType::kFloat32, {B, T, E});
  Value y = g.Input("setup_y", DType::kFloat32, {B, T, E});
  Value dy = g.Input("setup_dy", DType::kFloat32, {B, T, E});
  Value c = x;
  Value tokens = g.Input("setup_tokens", DType::kInt64, {B, T});
  Value targets = g.Input("setup_targets", DType::kInt64, {B, T});
  Value idx = g.Input("setup_idx", DType::kInt64, {2});
  Value lens = g.Input("setup_lens", DType::kInt64, {B});
  Value scores = g.Input("setup_scores", DType::kFloat32, {B, H, T, S});
  Value keep = g.Input("setup_keep", DType::kBool, {B, 1, 1, S});
  Value mask = g.Input("setup_mask", DType::kBool, {B, S});
  Value pad_keep = mask;
  Value q = x;
  Value k = g.Input("setup_k", DType::kFloat32, {B, S, E});
  Value v = k;
  Value qkv = g.Input("setup_qkv", DType::kFloat32, {B, T, 3 * E});
  Value x16 = g.Input("setup_x16", DType::kBFloat16, {3});
  Value local_count = g.Input("setup_count", DType::kFloat32, {});
  Value local_tokens = local_count;
  Value g1 = g.Input("setup_g1", DType::kFloat32, {2, 3});
  Value g2 = g.Input("setup_g2", DType::kFloat32, {6});
  Value dw = g1, db = g2, dw1 = g1, db1 = g2, dw2 = g1;
  Value started = StartAllReduce({dw, db}, 0, 6);
  Value w = g.Parameter("setup_w", {E, E}, Initializer::XavierUniform());
  Value a = g.Parameter("setup_a", {E}, Initializer::Ones());
  Value b = g.Parameter("setup_b", {E}, Initializer::Zeros());
  Value bias = b, gamma = a, beta = b;
  Value w1 = g.Parameter("setup_w1", {F, E}, Initializer::XavierUniform());
  Value b1 = g.Parameter("setup_b1", {F}, Initializer::Zeros());
  Value table = g.Parameter("setup_table", {V, E}, Initializer::Normal(0.0, 0.1).WithSeed(1));
  Value head = g.Parameter("setup_head", {V, E}, Initializer::XavierUniform());
  Value logits = Linear(Tanh(Embedding(table, tokens)), head);   // (B, T, V)
  Value loss = CrossEntropy(logits, tokens);
  Value weights = Softmax(scores), dweights = scores;
  std::function<Value(Value)> model = [this](Value t) {
    return Linear(Tanh(Embedding(table, t)), head);
  };
  std::vector<Value> params = {head};
  std::vector<Value> grads;        // loss's gradients for g.Parameters()
  Value update;                    // an SGD step of `head`
  Tensor batch = *Tensor::FromVector<int64_t>({B, T}, {0, 1, 2, 3, 4, 0, 1, 2});
  Tensor x_values = Filled(x.shape(), 1), y_values = Filled(y.shape(), 2);
  Feeds feeds = {{x, x_values}, {y, y_values}};
  Executor exec{g};
  std::unique_ptr<Plan> plan;      // Sum(x * y), fed by `feeds`
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  LrSchedule sched{.peak = 0.01, .warmup_steps = 1, .total_steps = 10};
  uint64_t step = 1, t = 1, n = 2;
  int64_t in = 3, out = 2;                     // a layer's sizes
  uint32_t c0 = 1, c1 = 2, c2 = 3, c3 = 4, k0 = 5, k1 = 6;   // Philox's counter, key
  std::string path = "notes.txt", text = "hello";
  std::string s = "caf\xc3\xa9 \xff";       // text to decode: one invalid byte
  int invalid_bytes = 0;

  absl::Status Prepare() {
    DAGRAD_ASSIGN_OR_RETURN(grads, Gradients(loss, g.Parameters()));
    Value velocity = g.Variable("setup_velocity", head.shape(), Initializer::Zeros());
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> dhead, Gradients(loss, {head}));
    update = SgdUpdate(head, dhead[0], velocity, g.Constant(Tensor::Scalar(0.1)), {});
    DAGRAD_ASSIGN_OR_RETURN(plan, exec.Compile({Sum(Mul(x, y))}));
    return g.status();
  }
  absl::Status Finish() { return g.status(); }
};

// A token model alone (every parameter reaches its loss), as the
// optimizers' examples train one: tokens, a batch of them, the loss and its
// gradients, an executor, a schedule at step t.
struct Model {
  Graph g;
  Value tokens = g.Input("setup_tokens", DType::kInt64, {B, T});
  Value table = g.Parameter("setup_table", {V, E}, Initializer::Normal(0.0, 0.1).WithSeed(1));
  Value head = g.Parameter("setup_head", {V, E}, Initializer::XavierUniform());
  Value loss = CrossEntropy(Linear(Tanh(Embedding(table, tokens)), head), tokens);
  std::vector<Value> grads;
  Tensor batch = *Tensor::FromVector<int64_t>({B, T}, {0, 1, 2, 3, 4, 0, 1, 2});
  Executor exec{g};
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  LrSchedule sched{.peak = 0.01, .warmup_steps = 1, .total_steps = 10};
  uint64_t t = 1;

  absl::Status Prepare() {
    DAGRAD_ASSIGN_OR_RETURN(grads, Gradients(loss, g.Parameters()));
    return g.status();
  }
  absl::Status Finish() { return g.status(); }
};

// A kernel's loop: `x`, `y` arrays of n elements, the op's context. (n is
// not a constant, as a kernel's is not: GCC would otherwise see a
// vectorised loop's iterations past the arrays, dead as they are, and warn.)
struct Kernel : NoSetup {
  using T = float;
  struct {
    Attrs attrs() const { return Attrs(); }
  } ctx;
  int64_t n = 4;
  float x[16] = {1, 5, 2, 7}, y[16] = {};
  int i = 1;
  double p = 0.5;
  RandomStream rs{.seed = 1, .stream = 2, .step = 3};
  Shape shape{2, 2};
  int axis = 1;
  int64_t o = 1, j = 0;   // the second row's first column
  float m = 7;            // the row's maximum
};

// The CPU kernels of the machine's level.
struct Kernels : NoSetup {
  const CpuKernels* kernels = nullptr;
  absl::Status Prepare() {
    DAGRAD_ASSIGN_OR_RETURN(kernels, ActiveKernels());
    return absl::OkStatus();
  }
};

// A small float product: a (2, 2) times the identity, into c.
struct SmallProduct : NoSetup {
  const int64_t m = 2, n = 2, k = 2, rsa = 2, csa = 1, rsb = 2, csb = 1;
  const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
  float c[4] = {};
  alignas(64) float panel[32] = {};   // k rows of 64 bytes
  SmallGemmArgs<float> args{.m = 1, .n = 1, .k = 2, .alpha = 1, .a = a, .rsa = 2, .csa = 1,
                            .b = b, .rsb = 1, .csb = 1, .beta = 0, .c = c, .ldc = 1,
                            .panel = panel};
};

// A bfloat16 product's operands: a (m, k), b (k, n), c (m, n) float.
struct Bf16Product : NoSetup {
  const int64_t m = 2, n = 3, k = 4;
  std::vector<BFloat16> av = std::vector<BFloat16>(m * k, FloatToBFloat16(0.5f));
  std::vector<BFloat16> bv = std::vector<BFloat16>(k * n, FloatToBFloat16(3.0f));
  std::vector<float> cv = std::vector<float>(m * n);
  const BFloat16* a = av.data();
  const BFloat16* b = bv.data();
  float* c = cv.data();
};

// A broadcast sum's operands: a (2, 3) and b (3,), into y (2, 3).
struct Broadcast : NoSetup {
  const Shape out_shape{2, 3}, a_shape{2, 3}, b_shape{3};
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  float y[6] = {};
};

// Rows of work for ParallelFor.
struct Rows : NoSetup {
  int64_t rows = 200, n = 128;
  std::vector<int> done = std::vector<int>(rows, 0);
  void SoftmaxRow(int64_t r) { ++done[r]; }
  absl::Status Finish() {
    return done == std::vector<int>(rows, 1) ? absl::OkStatus()
                                             : absl::InternalError("a row ran twice or never");
  }
};

// Default, with the process's thread count and wait policy put back after.
struct SavedThreads : Default {
  const int threads = NumThreads();
  const WaitPolicy policy = ActiveWaitPolicy();
  absl::StatusOr<std::vector<Tensor>> out = std::vector<Tensor>();
  absl::Status Finish() {
    SetWaitPolicy(policy);
    DAGRAD_RETURN_IF_ERROR(SetNumThreads(threads));
    if (!out.ok()) return out.status();
    return g.status();
  }
};

// Files an example reads: a checkpoint of Default's variables at `path`
// (metadata dim=64) and at ckpt.safetensors, and `file`, their tensors.
struct Checkpoint : Default {
  SafetensorsFile file;
  std::vector<Value> vars = g.Variables();
  absl::Status Prepare() {
    DAGRAD_RETURN_IF_ERROR(Default::Prepare());
    path = "model.safetensors";
    DAGRAD_RETURN_IF_ERROR(SaveVariables(exec, g.Parameters(), {{"dim", "64"}}, path));
    DAGRAD_ASSIGN_OR_RETURN(file, CollectVariables(exec, g.Parameters()));
    file.metadata["dim"] = "64";
    return WriteCheckpoint("ckpt.safetensors", file);
  }
};

// The folders and files the file examples name (run/, runs/train/,
// models/gpt/w.bin, model.safetensors, model.dot), and a safetensors
// `file` with its `bytes`.
struct Files : Default {
  SafetensorsFile file;
  std::string bytes, dot = "digraph {}\n";
  absl::Status Prepare() {
    for (const char* dir : {"run", "runs", "runs/train", "models", "models/gpt"}) {
      if (mkdir(dir, 0755) != 0) return absl::InternalError(absl::StrCat("mkdir ", dir));
    }
    file.tensors.emplace_back("encoder.layers.0.linear1.weight", Tensor::Scalar(1.0f));
    DAGRAD_ASSIGN_OR_RETURN(bytes, SerializeSafetensors(file));
    DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("models/gpt/w.bin", "weights"));
    DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("model.dot", dot));
    DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("w.safetensors", bytes));
    return WriteSafetensors("model.safetensors", file);
  }
  void Print(const std::string& what, const std::vector<std::string>& names) {
    std::cout << what << ": " << names.size() << "\n";
  }
  void Print(const std::string& name, const std::string& type) {
    std::cout << name << ": " << type << "\n";
  }
};

// Tensors an example converts or inspects.
struct Tensors : NoSetup {
  Tensor bf16_weights = *ConvertFloats(Filled({2, 2}, 1), DType::kBFloat16);
  Tensor t = bf16_weights;
};

// A memory budget's sizes and limit.
struct Budget : NoSetup {
  const int64_t arena_bytes = 1 << 20, scores_bytes = 1 << 19;
  const MemoryLimit limit{.bytes = int64_t{1} << 30, .source = "the example's limit"};
};

// Default's plan laid out (`graph`, `plan`), no variable allocated yet,
// and a limit.
struct PlanParts : Default {
  const Graph& graph = g;
  ExecutionPlan plan;
  const MemoryLimit limit{.bytes = int64_t{1} << 30, .source = "the example's limit"};
  bool allocated(NodeId) const { return false; }
  absl::Status Prepare() {
    DAGRAD_RETURN_IF_ERROR(Default::Prepare());
    DAGRAD_ASSIGN_OR_RETURN(plan, PlanLayout(g, {loss}, {}));
    return absl::OkStatus();
  }
};

// Default, with a byte limit for the planner and the error past it.
struct Planner : Default {
  const int64_t limit = int64_t{1} << 30;
  absl::Status TooBig(const ExecutionPlan& plan) {
    return absl::ResourceExhaustedError(absl::StrCat("the plan needs ", plan.arena_bytes));
  }
};

// Default, with a float output and a float64 norm as a training step
// fetches them.
struct StepOutputs : Default {
  std::vector<Tensor> out = {Tensor::Scalar(2.5f), Tensor::Scalar(1.0)};
  int64_t applied = 0;
};

// Default, with an Adam step's moments of `w` (v shadows the attention values).
struct Adam : Default {
  Value m = g.Variable("setup_m", {E, E}, Initializer::Zeros());
  Value v = g.Variable("setup_v", {E, E}, Initializer::Zeros());
  Value dw = Mul(w, w);
};

// Default, with x of rank 4: (B, T, H, E / H).
struct Heads : Default {
  Value x = g.Input("setup_x4", DType::kFloat32, {B, T, H, E / H});
};

// Default, with the shapes of MatMul's and Linear's comments.
struct Products : Default {
  Value a = g.Input("setup_a3", DType::kFloat32, {B, T, E});
  Value b = g.Input("setup_b2", DType::kFloat32, {E, S});
};

// A (3, 4) layer: w, b.
struct SmallLinear : Default {
  Value w = g.Parameter("setup_w34", {3, 4}, Initializer::XavierUniform());
  Value b = g.Parameter("setup_b3", {3}, Initializer::Zeros());
};

// Default, with logits of rank 2, (B, V), as sampling takes them.
struct Sampling : Default {
  Value logits = Reshape(Default::logits, {B * T, V});
};

}  // namespace dagrad::examples

#endif  // DAGRAD_TESTS_AUTODIFF_SUPPORT_HEADER_EXAMPLE_SETUPS_H_
