// tools/bench/bench_main.h
//
// BenchMain: the main() of dagrad's CPU benchmark programs. Takes
// --threads=N (0: dagrad's default) out of argv, configures the CPU backend
// (exit 2 with its message on a bad DAGRAD_CPU_ISA or BLIS_ARCH_TYPE), sets
// the threads, registers the program's cases and runs Google Benchmark;
// an argument neither takes (a misspelt --benchmark_filter) is exit 2.
//
//   int main(int argc, char** argv) { return dagrad::BenchMain(argc, argv, Register, 0); }

#ifndef DAGRAD_TOOLS_BENCH_BENCH_MAIN_H_
#define DAGRAD_TOOLS_BENCH_BENCH_MAIN_H_

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/cpu/cpu_runtime.h"

namespace dagrad {

inline int BenchMain(int argc, char** argv, void (*register_cases)(), int default_threads) {
  int threads = default_threads;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      char* end = nullptr;
      const long n = std::strtol(argv[i] + 10, &end, 10);
      if (end == argv[i] + 10 || *end != '\0' || n < 0 || n > 1 << 20) {
        std::fprintf(stderr, "--threads must be a count >= 0, got '%s'\n", argv[i] + 10);
        return 2;
      }
      threads = static_cast<int>(n);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (absl::Status st = ConfigureCpu(); !st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return 2;
  }
  if (absl::Status st = threads > 0 ? SetNumThreads(threads) : absl::OkStatus(); !st.ok()) {
    std::fprintf(stderr, "--threads: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

}  // namespace dagrad

#endif  // DAGRAD_TOOLS_BENCH_BENCH_MAIN_H_
