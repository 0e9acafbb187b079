// tools/bench/bench_main.h
//
// BenchMain: the main() of dagrad's CPU benchmark programs. Takes
// --threads=N (0: dagrad's default) out of argv, configures the CPU backend
// (exit 2 with its message on a bad DAGRAD_CPU_ISA or BLIS_ARCH_TYPE), sets
// the threads, registers the program's cases and runs Google Benchmark.
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
      threads = std::atoi(argv[i] + 10);
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
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

}  // namespace dagrad

#endif  // DAGRAD_TOOLS_BENCH_BENCH_MAIN_H_
