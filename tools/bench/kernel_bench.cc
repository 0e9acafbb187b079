// dagrad's dispatched kernels, each on every ISA level this CPU runs, one
// thread, as Google Benchmarks; and the batched small products and BLIS's
// sgemm at 1024^3 through the matmul op at the active level (DAGRAD_CPU_ISA,
// BLIS_ARCH_TYPE), for the ">= 60% of sgemm" comparison in one run.
//
//   ./build/tools/kernel_bench [--threads=N] [--benchmark_filter=small_gemm]
//
// Cases:
//   small_gemm_f32/<level>/<n>     one n^3 product, B transposed (q·kᵀ)
//   philox/<level>                 kPhiloxBlocks blocks (256 words)
//   matmul_batched/<n>             (64, n, n) x (64, n, n)ᵀ, the matmul op
//   matmul_1024                    1024^3, the matmul op (BLIS)
// Counter "flops" (rate: FLOP/s) or "words" (rate: words/s).

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_runtime.h"
#include "ops/matmul.h"
#include "ops/small_gemm.h"
#include "tools/bench/bench_main.h"

namespace dagrad {
namespace {

std::vector<float> Random(int64_t n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void SmallGemmCase(benchmark::State& state, CpuIsa isa, int64_t n) {
  const CpuKernels& kernels = KernelsFor(isa);
  const std::vector<float> a = Random(n * n), b = Random(n * n);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    SmallGemm<float>(kernels, n, n, n, 1.0f, a.data(), n, 1, b.data(), 1, n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

void PhiloxCase(benchmark::State& state, CpuIsa isa) {
  const CpuKernels& kernels = KernelsFor(isa);
  uint32_t out[4 * kPhiloxBlocks];
  uint64_t first = 0;
  for (auto _ : state) {
    kernels.philox_bits(42, 7, 3, first, out);
    first += kPhiloxBlocks;
    benchmark::DoNotOptimize(out);
  }
  state.counters["words"] =
      benchmark::Counter(4.0 * kPhiloxBlocks, benchmark::Counter::kIsIterationInvariantRate);
}

// MatMulCase times the matmul op on (batch, n, n) operands, b transposed
// when `trans_b`, at the active kernel level.
void MatMulCase(benchmark::State& state, int64_t batch, int64_t n, bool trans_b) {
  Graph g;
  const Shape shape = batch > 1 ? Shape({batch, n, n}) : Shape({n, n});
  Value a = g.Input("a", DType::kFloat32, shape);
  Value b = g.Input("b", DType::kFloat32, shape);
  Executor exec(g);
  auto plan = exec.Compile({}, {MatMul(a, b, {.transpose_b = trans_b})});
  if (!plan.ok()) return state.SkipWithError(std::string(plan.status().message()).c_str());
  const Feeds feeds = {{a, *Tensor::Zeros(DType::kFloat32, shape)},
                       {b, *Tensor::Zeros(DType::kFloat32, shape)}};
  for (auto _ : state) {
    auto out = exec.Run(**plan, feeds);
    if (!out.ok()) return state.SkipWithError(std::string(out.status().message()).c_str());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * batch * n * n * n,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void Register() {
  for (CpuIsa isa : CpuIsaRunnable()) {
    const std::string level(CpuIsaName(isa));
    for (int64_t n : {32, 48, 64}) {
      benchmark::RegisterBenchmark(absl::StrCat("small_gemm_f32/", level, "/", n).c_str(),
                                   SmallGemmCase, isa, n);
    }
    benchmark::RegisterBenchmark(absl::StrCat("philox/", level).c_str(), PhiloxCase, isa);
  }
  for (int64_t n : {32, 64}) {
    benchmark::RegisterBenchmark(absl::StrCat("matmul_batched/", n).c_str(), MatMulCase, 64, n,
                                 true)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("matmul_1024", MatMulCase, 1, 1024, false)->UseRealTime();
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) { return dagrad::BenchMain(argc, argv, dagrad::Register, 1); }
