// dagrad's dispatched kernels, each on every ISA level this CPU runs, one
// thread, as Google Benchmarks; and the batched small products and BLIS's
// sgemm at 1024^3 through the matmul op at the active level (DAGRAD_CPU_ISA,
// BLIS_ARCH_TYPE), for the ">= 60% of sgemm" comparison in one run.
//
//   ./build/tools/kernel_bench [--threads=N] [--benchmark_filter=small_gemm]
//
// Cases:
//   small_gemm_f32/<level>/<n>     one n^3 product, B transposed (q·kᵀ)
//   small_gemm_f32/<level>/{qk,pv,dsT_q}/T<t>_D<d>
//                                  attention's products for t tokens and head
//                                  size d: q·kᵀ, p·v, and dSᵀ·q (A transposed)
//   philox/<level>                 kPhiloxBlocks blocks (256 words)
//   dropout_f32/<level>            2^18 elements, p = 0.1 (the toy step's size)
//   exp_shift_sum/<level>/<n>      rows of n floats, exp and sum (softmax's core)
//   layer_norm_f32/<level>         2048 rows of 128, forward and dx
//   softmax/<n>, dropout           the ops at the active level: (256, n, n)
//                                  scores; (64, 32, 512) activations
//   transpose/2048x512             (2048, 512) -> (512, 2048), float32
//   argmax/2048x256                each row's largest of 256 (the trainers'
//                                  accuracy over a byte vocabulary)
//   tanh/64x32x512, sigmoid/...    of the dropout case's activations
//   broadcast_to/2048x1_to_2048    (2048, 1) -> (2048, 2048): a reduction's
//                                  gradient
//   matmul_batched/<n>             (64, n, n) x (64, n, n)ᵀ, the matmul op
//   matmul_1024                    1024^3, the matmul op (BLIS)
//   gemm_bf16/<shape>/<side>       the GPT text step's products (dim 128, ffn
//                                  512, vocab 256, 32 x 64 rows; dW with A
//                                  by columns, dX with B by columns), one
//                                  thread: vdpbf16ps (the native bf16
//                                  kernel), widened (bf16 widened + sgemm),
//                                  sgemm (BLIS on float32 operands)
//   fma_peak/<level>               the peak float rate of --threads cores at
//                                  the level (tools/bench/fma_peak.h): no
//                                  product passes it
// Counter "flops" (rate: FLOP/s), "words" (rate: words/s) or "elements".

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/bfloat16.h"
#include "engine/executor.h"
#include "ops/shape_ops.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/math/dropout_math.h"
#include "ops/matmul.h"
#include "ops/sampling.h"
#include "ops/softmax.h"
#include "tools/bench/bench_main.h"
#include "tools/bench/fma_peak.h"

namespace dagrad {
namespace {

std::vector<float> Random(int64_t n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// SmallGemmCase times one m x n x k product; a_t / b_t store A / B
// transposed (by columns), as attention's backward and q·kᵀ read them.
void SmallGemmCase(benchmark::State& state, CpuIsa isa, int64_t m, int64_t n, int64_t k,
                   bool a_t, bool b_t) {
  const CpuKernels& kernels = KernelsFor(isa);
  const std::vector<float> a = Random(m * k), b = Random(k * n);
  std::vector<float> c(m * n);
  const int64_t rsa = a_t ? 1 : k, csa = a_t ? m : 1, rsb = b_t ? 1 : n, csb = b_t ? k : 1;
  for (auto _ : state) {
    SmallGemm<float>(kernels, m, n, k, 1.0f, a.data(), rsa, csa, b.data(), rsb, csb, 0.0f,
                     c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
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

void ElementsRate(benchmark::State& state, int64_t n) {
  state.counters["elements"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

void DropoutCase(benchmark::State& state, CpuIsa isa) {
  const CpuKernels& kernels = KernelsFor(isa);
  constexpr int64_t kN = int64_t{1} << 18;
  std::vector<float> x = Random(kN), y(kN);
  DropoutArgs<float> args{.seed = 42, .stream = 7, .step = 3, .n = kN,
                          .threshold = DropoutThreshold(0.1), .scale = 1.0f / 0.9f,
                          .x = x.data(), .y = y.data()};
  const int64_t chunks = (kN + 4 * kPhiloxBlocks - 1) / (4 * kPhiloxBlocks);
  for (auto _ : state) {
    kernels.dropout_f32(args, 0, chunks);
    ++args.step;
    benchmark::DoNotOptimize(y.data());
  }
  ElementsRate(state, kN);
}

void ExpShiftSumCase(benchmark::State& state, CpuIsa isa, int64_t n) {
  const CpuKernels& kernels = KernelsFor(isa);
  constexpr int64_t kTotal = 1 << 16;
  const std::vector<float> x = Random(kTotal);
  std::vector<float> y(kTotal);
  for (auto _ : state) {
    double s = 0;
    for (int64_t r = 0; r + n <= kTotal; r += n) {
      s += kernels.exp_shift_sum_f32(x.data() + r, y.data() + r, n, 1.0f);
    }
    benchmark::DoNotOptimize(s);
  }
  ElementsRate(state, kTotal / n * n);
}

void LayerNormCase(benchmark::State& state, CpuIsa isa) {
  const CpuKernels& kernels = KernelsFor(isa);
  constexpr int64_t kRows = 2048, kD = 128;
  const std::vector<float> x = Random(kRows * kD), g = Random(kRows * kD), gamma = Random(kD),
                           beta = Random(kD);
  std::vector<float> y(kRows * kD);
  const LayerNormArgs<float> args{.d = kD, .eps = 1e-5, .x = x.data(), .gamma = gamma.data(),
                                  .beta = beta.data(), .g = g.data(), .y = y.data()};
  for (auto _ : state) {
    kernels.layer_norm_f32(args, 0, kRows);
    kernels.layer_norm_grad_f32(args, 0, kRows);
    benchmark::DoNotOptimize(y.data());
  }
  ElementsRate(state, kRows * kD);
}

// LayerNormParamGradCase times dgamma and dbeta's column sums at the same size.
void LayerNormParamGradCase(benchmark::State& state, CpuIsa isa) {
  const CpuKernels& kernels = KernelsFor(isa);
  constexpr int64_t kRows = 2048, kD = 128;
  const std::vector<float> x = Random(kRows * kD), g = Random(kRows * kD);
  std::vector<double> acc(2 * kD);
  const LayerNormArgs<float> args{.d = kD, .eps = 1e-5, .x = x.data(), .g = g.data()};
  for (auto _ : state) {
    kernels.layer_norm_param_grad_f32(args, 0, kRows, acc.data());
    benchmark::DoNotOptimize(acc.data());
  }
  ElementsRate(state, kRows * kD);
}

// FmaPeakCase runs PeakMultiplyAdds on every thread at once (--threads), so
// that its rate is the cores' joint peak (two hardware threads of one core
// share its multiply-add units).
void FmaPeakCase(benchmark::State& state, CpuIsa isa) {
  constexpr int64_t kRounds = int64_t{1} << 20;
  const int64_t threads = NumThreads();
  std::vector<float> sinks(threads * 16);  // a cache line per thread
  std::vector<double> flops(threads);
  for (auto _ : state) {
    ParallelFor(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        flops[t] = PeakMultiplyAdds(isa, kRounds, &sinks[t * 16]);
      }
    });
  }
  benchmark::DoNotOptimize(sinks.data());
  double total = 0;
  for (double f : flops) total += f;
  state.counters["flops"] = benchmark::Counter(total, benchmark::Counter::kIsIterationInvariantRate);
}

// OpCase times one op on a random input of `shape` at the active level.
void OpCase(benchmark::State& state, Shape shape, Value (*op)(Value)) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, shape);
  Executor exec(g);
  auto plan = exec.Compile({}, {op(x)});
  if (!plan.ok()) return state.SkipWithError(std::string(plan.status().message()).c_str());
  const std::vector<float> data = Random(shape.num_elements());
  auto input = Tensor::FromVector<float>(shape, data);
  if (!input.ok()) return state.SkipWithError(std::string(input.status().message()).c_str());
  const Feeds feeds = {{x, *input}};
  uint64_t step = 0;
  for (auto _ : state) {
    auto out = exec.Run(**plan, feeds, {.training = true, .step = step++});
    if (!out.ok()) return state.SkipWithError(std::string(out.status().message()).c_str());
  }
  ElementsRate(state, shape.num_elements());
}

Value SoftmaxOp(Value x) { return Softmax(x); }
Value DropoutOp(Value x) { return Dropout(x, 0.1); }
Value TransposeOp(Value x) { return Transpose(x, 0, 1); }
Value ArgMaxOp(Value x) { return ArgMax(x, -1); }
Value TanhOp(Value x) { return Tanh(x); }
Value SigmoidOp(Value x) { return Sigmoid(x); }
// A reduction's gradient: a column broadcast to its rows' width.
Value BroadcastColumnOp(Value x) { return BroadcastTo(x, Shape({x.dim(0), 2048})); }

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
  auto zeros = Tensor::Zeros(DType::kFloat32, shape);
  if (!zeros.ok()) return state.SkipWithError(std::string(zeros.status().message()).c_str());
  const Feeds feeds = {{a, *zeros}, {b, *zeros}};
  for (auto _ : state) {
    auto out = exec.Run(**plan, feeds);
    if (!out.ok()) return state.SkipWithError(std::string(out.status().message()).c_str());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * batch * n * n * n,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// GemmBf16Case times one m x n x k product on `side`'s path, one thread
// (rated by CPU time, which other processes on the core move less).
void GemmBf16Case(benchmark::State& state, const std::string& side, int64_t m,
                  int64_t n, int64_t k, bool a_t, bool b_t) {
  const std::vector<float> a = Random(m * k), b = Random(k * n);
  std::vector<BFloat16> a16, b16;
  for (float x : a) a16.push_back(FloatToBFloat16(x));
  for (float x : b) b16.push_back(FloatToBFloat16(x));
  std::vector<float> c(m * n);
  const int64_t rsa = a_t ? 1 : k, csa = a_t ? m : 1, rsb = b_t ? 1 : n,
                csb = b_t ? k : 1;
  const GemmBf16Fn native =
      CpuHasAvx512Bf16() ? Bf16ProductsFor(CpuIsa::kAvx512, "cpu features").gemm
                         : nullptr;
  if (side == "vdpbf16ps" && native == nullptr)
    return state.SkipWithError("no AVX512_BF16");
  for (auto _ : state) {
    const absl::Status st =
        side == "sgemm"
            ? Gemm<float>(m, n, k, 1.0f, a.data(), rsa, csa, b.data(), rsb, csb,
                          0.0f, c.data(), n, 1, /*one_thread=*/true)
            : GemmBFloat16On(side == "widened" ? nullptr : native, m, n, k,
                             1.0f, a16.data(), rsa, csa, b16.data(), rsb, csb,
                             0.0f, c.data(), n, 1, /*one_thread=*/true);
    if (!st.ok()) return state.SkipWithError(std::string(st.message()).c_str());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["flops"] = benchmark::Counter(
      2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

void RegisterGemmBf16() {
  struct Product {
    const char* name;
    int64_t m, n, k;
    bool a_t, b_t;
  };
  for (const Product& s : {Product{"qkv", 2048, 384, 128, false, false},
                           Product{"fc", 2048, 512, 128, false, false},
                           Product{"mlp_proj", 2048, 128, 512, false, false},
                           Product{"logits", 2048, 256, 128, false, false},
                           Product{"fc_dx", 2048, 128, 512, false, true},
                           Product{"fc_dw", 128, 512, 2048, true, false}}) {
    for (const char* side : {"vdpbf16ps", "sgemm", "widened"}) {
      benchmark::RegisterBenchmark(absl::StrCat("gemm_bf16/", s.name, "/", side).c_str(),
                                   GemmBf16Case, std::string(side), s.m, s.n, s.k, s.a_t, s.b_t);
    }
  }
}

void Register() {
  RegisterGemmBf16();
  for (CpuIsa isa : CpuIsaRunnable()) {
    const std::string level(CpuIsaName(isa));
    for (int64_t n : {32, 48, 64}) {
      benchmark::RegisterBenchmark(absl::StrCat("small_gemm_f32/", level, "/", n).c_str(),
                                   SmallGemmCase, isa, n, n, n, false, true);
    }
    for (const auto& [t, d] : {std::pair<int64_t, int64_t>{128, 32}, {256, 64}}) {
      // Attention's products for T tokens, head size d: forward q·kᵀ and
      // p·v, backward dS·k (like p·v) and dSᵀ·q (A by columns).
      const std::string td = absl::StrCat("/T", t, "_D", d);
      auto add = [&](const char* name, int64_t m, int64_t n, int64_t k, bool a_t, bool b_t) {
        benchmark::RegisterBenchmark(absl::StrCat("small_gemm_f32/", level, "/", name, td).c_str(),
                                     SmallGemmCase, isa, m, n, k, a_t, b_t);
      };
      add("qk", t, t, d, false, true);
      add("pv", t, d, t, false, false);
      add("dsT_q", t, d, t, true, false);
    }
    benchmark::RegisterBenchmark(absl::StrCat("philox/", level).c_str(), PhiloxCase, isa);
    benchmark::RegisterBenchmark(absl::StrCat("dropout_f32/", level).c_str(), DropoutCase, isa);
    for (int64_t n : {32, 256}) {
      benchmark::RegisterBenchmark(absl::StrCat("exp_shift_sum/", level, "/", n).c_str(),
                                   ExpShiftSumCase, isa, n);
    }
    benchmark::RegisterBenchmark(absl::StrCat("layer_norm_f32/", level).c_str(), LayerNormCase,
                                 isa);
    benchmark::RegisterBenchmark(absl::StrCat("layer_norm_param_grad_f32/", level).c_str(),
                                 LayerNormParamGradCase, isa);
    benchmark::RegisterBenchmark(absl::StrCat("fma_peak/", level).c_str(), FmaPeakCase, isa)
        ->UseRealTime();
  }
  for (int64_t n : {32, 128}) {
    benchmark::RegisterBenchmark(absl::StrCat("softmax/", n).c_str(), OpCase,
                                 Shape({256, n, n}), SoftmaxOp);
  }
  benchmark::RegisterBenchmark("dropout", OpCase, Shape({64, 32, 512}), DropoutOp);
  benchmark::RegisterBenchmark("transpose/2048x512", OpCase, Shape({2048, 512}), TransposeOp);
  benchmark::RegisterBenchmark("argmax/2048x256", OpCase, Shape({2048, 256}), ArgMaxOp);
  benchmark::RegisterBenchmark("tanh/64x32x512", OpCase, Shape({64, 32, 512}), TanhOp);
  benchmark::RegisterBenchmark("sigmoid/64x32x512", OpCase, Shape({64, 32, 512}), SigmoidOp);
  benchmark::RegisterBenchmark("broadcast_to/2048x1_to_2048", OpCase, Shape({2048, 1}),
                               BroadcastColumnOp);
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
