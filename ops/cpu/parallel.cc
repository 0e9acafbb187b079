#include "ops/cpu/parallel.h"

#include <omp.h>

#include "ops/cpu/cpu_threads.h"

namespace dagrad {

int64_t MaxParallelChunks() { return omp_in_parallel() ? 1 : ComputeThreads(); }

void ParallelChunks(int64_t n, int64_t chunks, absl::FunctionRef<void(int64_t, int64_t)> f) {
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    f(n * c / chunks, n * (c + 1) / chunks);
  }
}

}  // namespace dagrad
