// GELU against ReLU, forward plus backward, at (32, 64, 512) float32: the
// ops through the executor (what a training step pays, at the active ISA
// level: DAGRAD_CPU_ISA lowers it), and the GELU kernels of every level on
// one thread.
//
//   ./build/tools/gelu_bench [--threads=N] [--benchmark_filter=vs_relu]
//
// Cases:
//   gelu_vs_relu/<form>       each iteration runs ReLU's and GELU's plans
//                             (y = f(x) and dx = g * f'(x)), one after the
//                             other, profiled (ExecutorOptions::profile):
//                             relu_ms and gelu_ms are their two kernels'
//                             time per run (relu + relu_grad, gelu +
//                             gelu_grad), ratio = gelu_ms / relu_ms (the
//                             issue's target: <= 2 for the exact form);
//                             run_ratio compares whole runs (feeds and
//                             fetches included)
//   gelu_kernels/<level>/<form>  gelu_f32 then gelu_grad_f32 on 2^20
//                             elements, one thread
// <form> is exact (approximate "none") or tanh.

#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/elementwise.h"
#include "ops/gelu.h"
#include "tools/bench/bench_main.h"

namespace dagrad {
namespace {

const Shape kShape = {32, 64, 512};

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// FwdBwd is a compiled plan of y = act(x) and its dx for the seed g.
struct FwdBwd {
  Graph graph;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<Plan> plan;
  Feeds feeds;
};

absl::Status Build(FwdBwd& f, Value (*act)(Value, GeluApproximate),
                   GeluApproximate form) {
  Value x = f.graph.Input("x", DType::kFloat32, kShape);
  Value g = f.graph.Input("g", DType::kFloat32, kShape);
  Value y = act(x, form);
  auto dx = Gradients(y, {x}, g);
  if (!dx.ok()) return dx.status();
  f.exec =
      std::make_unique<Executor>(f.graph, ExecutorOptions{.profile = true});
  auto plan = f.exec->Compile({y, (*dx)[0]});
  if (!plan.ok()) return plan.status();
  f.plan = std::move(*plan);
  auto xt = Tensor::FromVector<float>(kShape, Random(kShape.num_elements(), 1));
  auto gt = Tensor::FromVector<float>(kShape, Random(kShape.num_elements(), 2));
  if (!xt.ok()) return xt.status();
  if (!gt.ok()) return gt.status();
  f.feeds = {{x, *xt}, {g, *gt}};
  return absl::OkStatus();
}

Value ReluOf(Value x, GeluApproximate) { return Relu(x); }

// Seconds of one run of f's plan.
absl::StatusOr<double> TimeRun(FwdBwd& f) {
  const auto start = std::chrono::steady_clock::now();
  auto out = f.exec->Run(*f.plan, f.feeds);
  if (!out.ok()) return out.status();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// KernelSeconds is the profiled time of f's kernels except the feeds'.
double KernelSeconds(const FwdBwd& f) {
  double total = 0;
  for (const auto& [op, entry] : f.plan->profile().by_op) {
    if (op == "relu" || op == "relu_grad" || op == "gelu" ||
        op == "gelu_grad") {
      total += entry.seconds;
    }
  }
  return total;
}

void GeluVsRelu(benchmark::State& state, GeluApproximate form) {
  FwdBwd relu, gelu;
  for (auto st : {Build(relu, ReluOf, form), Build(gelu, Gelu, form)}) {
    if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
  }
  double relu_s = 0, gelu_s = 0;
  for (auto _ : state) {
    auto r = TimeRun(relu);
    auto g = TimeRun(gelu);
    if (!r.ok() || !g.ok()) return state.SkipWithError("run failed");
    relu_s += *r;
    gelu_s += *g;
  }
  const double n = state.iterations();
  state.counters["relu_ms"] = 1e3 * KernelSeconds(relu) / n;
  state.counters["gelu_ms"] = 1e3 * KernelSeconds(gelu) / n;
  state.counters["ratio"] = KernelSeconds(gelu) / KernelSeconds(relu);
  state.counters["run_ratio"] = gelu_s / relu_s;
}

void GeluKernels(benchmark::State& state, CpuIsa isa, bool tanh) {
  const CpuKernels& k = KernelsFor(isa);
  const int64_t n = int64_t{1} << 20;
  const std::vector<float> x = Random(n, 1), g = Random(n, 2);
  std::vector<float> y(n), dx(n);
  for (auto _ : state) {
    k.gelu_f32({tanh, x.data(), nullptr, y.data()}, 0, n);
    k.gelu_grad_f32({tanh, x.data(), g.data(), dx.data()}, 0, n);
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(dx.data());
  }
  state.counters["elements"] =
      benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
}

void Register() {
  for (auto [name, form] : {std::pair{"exact", GeluApproximate::kNone},
                            std::pair{"tanh", GeluApproximate::kTanh}}) {
    benchmark::RegisterBenchmark(absl::StrCat("gelu_vs_relu/", name).c_str(),
                                 GeluVsRelu, form)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    for (CpuIsa isa : CpuIsaRunnable()) {
      benchmark::RegisterBenchmark(
          absl::StrCat("gelu_kernels/", CpuIsaName(isa), "/", name).c_str(),
          GeluKernels, isa, form == GeluApproximate::kTanh)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) {
  return dagrad::BenchMain(argc, argv, dagrad::Register, 0);
}
