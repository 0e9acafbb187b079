// Times whole training steps and multi-head attention on a CUDA device,
// with CUDA events on the device's stream (TimeOnDevice), and the toy step
// on the CPU too. Without a GPU it says why and exits 0.
// tools/bench/torch_cuda_anchor.py times the same work in PyTorch, and
// tools/bench/gpu_check.sh runs both and prints the comparison.
//
//   ./build/tools/cuda_bench [--case=all|toy|large|mha] [--iters=50] [--warmup=10]
//                            [--cpu_iters=5] [--attention=fused|composed]
//
// Cases (each prints a line, then a JSON line {"case", "ms"} for the table):
//   toy_step         the toy transformer's training step (vocab 16, T 32, E 128,
//                    H 4, L 2, ffn 512, batch 64, dropout 0.1, Adam, clipping at
//                    1.0), float32;
//   large_step_f32   the same at vocab 1000, T 256, E 512, H 8, L 6, ffn 2048,
//                    batch 32, float32;
//   large_step_tf32  the same with TF32 matrix products;
//   mha_fwdbwd_f32   MultiheadAttention forward + backward (input and weight
//                    gradients) at (B, T, E, H) = (32, 512, 1024, 16), float32,
//                    its inputs x and dy uploaded once (Executor::Upload), as
//                    PyTorch's stay on the GPU.
// --case=large runs both large cases. --attention picks the attention's
// path (nn::AttentionPath; the fused op by default) in every case. Each
// reports the median and mean
// milliseconds per step on the device (events), and on the host clock
// (which includes staging the fed inputs and fetching the loss).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_device.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "models/nn/attention.h"
#include "models/toy/tasks.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"

namespace dagrad {
namespace {

struct Flags {
  std::string which = "all";
  int iters = 50;
  int warmup = 10;
  int cpu_iters = 5;
  nn::AttentionPath attention = nn::AttentionPath::kFused;
};

struct Timing {
  double median_ms = 0, mean_ms = 0, wall_ms = 0;
};

Timing Summarize(std::vector<double> ms, double wall_ms) {
  std::sort(ms.begin(), ms.end());
  Timing t;
  t.median_ms = ms[ms.size() / 2];
  t.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  t.wall_ms = wall_ms / ms.size();
  return t;
}

// Times `step` on the executor's CUDA device after `warmup` untimed runs.
absl::StatusOr<Timing> TimeGpu(const Executor& exec, const Flags& f,
                               const std::function<absl::Status()>& step) {
  for (int i = 0; i < f.warmup; ++i) DAGRAD_RETURN_IF_ERROR(step());
  const auto start = std::chrono::steady_clock::now();
  DAGRAD_ASSIGN_OR_RETURN(std::vector<double> ms, TimeOnDevice(exec.device(), f.iters, step));
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return Summarize(std::move(ms), wall);
}

// RandomNormal returns float32 N(0, 1) values of `shape`.
absl::StatusOr<Tensor> RandomNormal(const Shape& shape, uint64_t seed) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(DType::kFloat32, shape));
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal;
  for (int64_t i = 0, count = t.num_elements(); i < count; ++i) t.data<float>()[i] = normal(gen);
  return t;
}

absl::StatusOr<double> TimeCpu(int iters, const std::function<absl::Status()>& step) {
  DAGRAD_RETURN_IF_ERROR(step());  // first run: variables, caches
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) DAGRAD_RETURN_IF_ERROR(step());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         iters;
}

struct StepConfig {
  const char* name;
  models::ToyConfig model;
  int64_t batch;
  bool tf32;
  bool cpu;  // also time it on the CPU
};

// PrintJson writes the line tools/bench/gpu_compare.py reads.
void PrintJson(const char* name, const Timing& t, const Executor& exec) {
  std::printf("{\"case\": \"%s\", \"ms\": %.4f, \"device\": \"%s\"}\n", name, t.median_ms,
              exec.device().name().c_str());
}

absl::Status BenchTrainingStep(const StepConfig& sc, const Flags& f) {
  Graph g;
  const int64_t t_len = sc.model.seq_len;
  models::ToyConfig config = sc.model;
  config.attention = f.attention;
  DAGRAD_ASSIGN_OR_RETURN(models::ToyTransformer model, models::ToyTransformer::Create(g, config));
  Value tokens = g.Input("tokens", DType::kInt64, {sc.batch, t_len});
  Value targets = g.Input("targets", DType::kInt64, {sc.batch, t_len});
  // No padding (a null lengths Value), as in the PyTorch anchor.
  Value loss = CrossEntropy(model(tokens, Value()).logits, targets);
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts,
                          BuildTrainingStep(loss, model.parameters(),
                                            {.kind = OptimizerKind::kAdam, .clip_norm = 1.0}));
  DAGRAD_ASSIGN_OR_RETURN(models::TaskGenerator tasks,
                          models::TaskGenerator::Create(
                              {.vocab = sc.model.vocab, .seq_len = t_len, .min_len = 1}, 1));
  DAGRAD_ASSIGN_OR_RETURN(const models::TaskBatch batch, tasks.Batch(0, sc.batch));
  int64_t step = 0;
  auto run = [&](Executor& exec, Plan& plan) {
    ++step;
    return exec
        .Run(plan,
             {{tokens, batch.tokens},
              {targets, batch.targets},
              {ts.lr, Tensor::Scalar<double>(1e-4)},
              {ts.step, Tensor::Scalar<double>(static_cast<double>(step))}},
             {.training = true, .step = static_cast<uint64_t>(step)})
        .status();
  };
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> gpu, CudaDevice(0, {.allow_tf32 = sc.tf32}));
  Executor exec(g, std::move(gpu));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, ts.updates));
  DAGRAD_ASSIGN_OR_RETURN(Timing t, TimeGpu(exec, f, [&] { return run(exec, *plan); }));
  std::printf("%-16s %8.3f ms median, %8.3f ms mean (device events), %8.3f ms host clock;"
              " arena %.1f MiB, %lld of %lld runs replayed a CUDA graph%s%s\n",
              sc.name, t.median_ms, t.mean_ms, t.wall_ms, plan->peak_bytes() / 1048576.0,
              static_cast<long long>(plan->replays()),
              static_cast<long long>(f.warmup + f.iters),
              plan->recording_failure().ok() ? "" : ": ",
              std::string(plan->recording_failure().message()).c_str());
  PrintJson(sc.name, t, exec);
  if (sc.cpu && f.cpu_iters > 0) {
    Executor cpu(g);
    DAGRAD_ASSIGN_OR_RETURN(auto cpu_plan, cpu.Compile({loss}, ts.updates));
    DAGRAD_ASSIGN_OR_RETURN(double ms, TimeCpu(f.cpu_iters, [&] { return run(cpu, *cpu_plan); }));
    std::printf("%-16s %8.3f ms on the CPU (%d steps): CUDA is %.1fx faster\n", sc.name, ms,
                f.cpu_iters, ms / t.median_ms);
  }
  return absl::OkStatus();
}

absl::Status BenchMha(const Flags& f) {
  constexpr int64_t kB = 32, kT = 512, kE = 1024, kH = 16;
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(
      nn::MultiheadAttention mha,
      nn::MultiheadAttention::Create(
          g, "mha", {.embed_dim = kE, .num_heads = kH, .attention = f.attention}));
  Value x = g.Input("x", DType::kFloat32, {kB, kT, kE});
  Value dy = g.Input("dy", DType::kFloat32, {kB, kT, kE});
  Value y = mha(x, x, x).output;
  // sum(y * dy): its gradients are the backward pass seeded with dy.
  Value loss = Sum(Mul(y, dy));
  std::vector<Value> wrt = mha.parameters();
  wrt.push_back(x);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, wrt));
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> gpu, CudaDevice());
  Executor exec(g, std::move(gpu));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, grads));
  // Random data: zeros can run faster than real data and hide unwritten outputs.
  DAGRAD_ASSIGN_OR_RETURN(Tensor xs, RandomNormal({kB, kT, kE}, 1));
  DAGRAD_ASSIGN_OR_RETURN(Tensor dys, RandomNormal({kB, kT, kE}, 2));
  // On the device once, as PyTorch's inputs are: no copy per step.
  DAGRAD_ASSIGN_OR_RETURN(DeviceTensor x_on_device, exec.Upload(xs));
  DAGRAD_ASSIGN_OR_RETURN(DeviceTensor dy_on_device, exec.Upload(dys));
  const DeviceFeeds feeds = {{x, x_on_device}, {dy, dy_on_device}};
  DAGRAD_ASSIGN_OR_RETURN(Timing t, TimeGpu(exec, f, [&] {
                            return exec.Run(*plan, {}, feeds, {}).status();
                          }));
  // Forward: four E x E projections and two (T x T x Dh) products per head;
  // the backward pass twice that.
  const double fwd = 4 * 2.0 * kB * kT * kE * kE + 2 * 2.0 * kB * kT * kT * kE;
  const double tflops = 3 * fwd / (t.median_ms * 1e-3) / 1e12;
  std::printf("%-16s (B, T, E, H) = (%lld, %lld, %lld, %lld): %8.3f ms median, %8.3f ms "
              "mean (device events), %8.3f ms host clock; ~%.1f TFLOP/s, arena %.1f MiB\n",
              "mha_fwdbwd_f32", static_cast<long long>(kB), static_cast<long long>(kT),
              static_cast<long long>(kE), static_cast<long long>(kH), t.median_ms, t.mean_ms,
              t.wall_ms, tflops, plan->peak_bytes() / 1048576.0);
  PrintJson("mha_fwdbwd_f32", t, exec);
  return absl::OkStatus();
}

bool ParseInt(const char* arg, const char* flag, int* out) {
  const size_t n = std::strlen(flag);
  if (std::strncmp(arg, flag, n) != 0) return false;
  *out = std::atoi(arg + n);
  return true;
}

int Main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    if (ParseInt(argv[i], "--iters=", &f.iters) || ParseInt(argv[i], "--warmup=", &f.warmup) ||
        ParseInt(argv[i], "--cpu_iters=", &f.cpu_iters)) {
      continue;
    }
    if (std::strncmp(argv[i], "--case=", 7) == 0) {
      f.which = argv[i] + 7;
    } else if (std::strncmp(argv[i], "--attention=", 12) == 0) {
      absl::StatusOr<nn::AttentionPath> path = nn::ParseAttentionPath(argv[i] + 12);
      if (!path.ok()) {
        std::fprintf(stderr, "cuda_bench: --%s\n", std::string(path.status().message()).c_str());
        return 2;
      }
      f.attention = *path;
    } else {
      std::fprintf(stderr, "cuda_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (f.iters < 1 || f.warmup < 0 ||
      (f.which != "all" && f.which != "toy" && f.which != "large" && f.which != "mha")) {
    std::fprintf(stderr, "cuda_bench: --iters >= 1, --warmup >= 0, --case=all|toy|large|mha\n");
    return 2;
  }
  if (absl::StatusOr<std::unique_ptr<Device>> gpu = CudaDevice(); !gpu.ok()) {
    std::printf("cuda_bench: nothing to time: %s\n", std::string(gpu.status().message()).c_str());
    return 0;
  }
  std::printf("cuda: %s\n", DescribeCuda().c_str());
  const models::ToyConfig toy{.vocab = 16, .seq_len = 32, .dim = 128, .heads = 4, .layers = 2,
                              .ffn = 512, .dropout = 0.1};
  const models::ToyConfig large{.vocab = 1000, .seq_len = 256, .dim = 512, .heads = 8,
                                .layers = 6, .ffn = 2048, .dropout = 0.1};
  absl::Status st;
  if (f.which == "all" || f.which == "toy") {
    st.Update(BenchTrainingStep({"toy_step", toy, 64, false, true}, f));
  }
  if (f.which == "all" || f.which == "large") {
    if (st.ok()) st.Update(BenchTrainingStep({"large_step_f32", large, 32, false, false}, f));
    if (st.ok()) st.Update(BenchTrainingStep({"large_step_tf32", large, 32, true, false}, f));
  }
  if (st.ok() && (f.which == "all" || f.which == "mha")) st.Update(BenchMha(f));
  if (!st.ok()) {
    std::fprintf(stderr, "cuda_bench: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) { return dagrad::Main(argc, argv); }
