// sgemm 1024^3 through dagrad's matmul against BLIS called directly, in one
// run. Prints the engine's rate as a fraction of BLIS's and exits non-zero
// below 85%.
//
//   ./build/tools/sgemm_bench [--threads=N] [benchmark flags]
//
// This tool calls BLIS itself (the one place outside ops/ that does) because
// raw BLIS is what the engine is measured against.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "engine/executor.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/matmul.h"

extern "C" {
#include <blis.h>
}

namespace {

constexpr int64_t kN = 1024;

void SetFlops(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}

void BM_BlisSgemm(benchmark::State& state) {
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), c(kN * kN);
  float one = 1, zero = 0;
  for (auto _ : state) {
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, kN, kN, kN, &one, a.data(), kN, 1,
              b.data(), kN, 1, &zero, c.data(), kN, 1);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(state);
}

void BM_EngineMatMul(benchmark::State& state) {
  dagrad::Graph g;
  dagrad::Value a = g.Input("a", dagrad::DType::kFloat32, {kN, kN});
  dagrad::Value b = g.Input("b", dagrad::DType::kFloat32, {kN, kN});
  dagrad::Value c = dagrad::MatMul(a, b);
  dagrad::Executor exec(g);
  auto plan = exec.Compile({}, {c});
  if (!plan.ok()) {
    state.SkipWithError(std::string(plan.status().message()).c_str());
    return;
  }
  auto zeros = dagrad::Tensor::Zeros(dagrad::DType::kFloat32, {kN, kN});
  if (!zeros.ok()) {
    state.SkipWithError(std::string(zeros.status().message()).c_str());
    return;
  }
  dagrad::Feeds feeds = {{a, *zeros}, {b, *zeros}};
  for (auto _ : state) {
    auto out = exec.Run(**plan, feeds);
    if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  }
  SetFlops(state);
}

// Keeps each benchmark's rate for the summary.
class RateReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      auto it = run.counters.find("GFLOP/s");
      if (it != run.counters.end() && run.run_type == Run::RT_Iteration) {
        rates[run.run_name.function_name] = it->second.value;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> rates;
};

}  // namespace

BENCHMARK(BM_BlisSgemm)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_EngineMatMul)->Unit(benchmark::kMillisecond)->MinTime(1.0)->UseRealTime();

int main(int argc, char** argv) {
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
  }
  if (absl::Status st = dagrad::ConfigureCpu(); !st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return 2;
  }
  if (absl::Status st = threads > 0 ? dagrad::SetNumThreads(threads) : absl::OkStatus();
      !st.ok()) {
    std::fprintf(stderr, "--threads: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  const dagrad::CpuInfo info = dagrad::GetCpuInfo();
  std::printf("BLIS kernel set %s, %d thread(s)\n", info.blis_arch.c_str(), info.threads);
  RateReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double blis = reporter.rates["BM_BlisSgemm"], engine = reporter.rates["BM_EngineMatMul"];
  if (blis <= 0 || engine <= 0) return 1;
  const double ratio = engine / blis;
  std::printf("engine matmul: %.1f GFLOP/s, BLIS sgemm: %.1f GFLOP/s, ratio %.3f (target >= 0.85): %s\n",
              engine, blis, ratio, ratio >= 0.85 ? "PASS" : "FAIL");
  return ratio >= 0.85 ? 0 : 1;
}
