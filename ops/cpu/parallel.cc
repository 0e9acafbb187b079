#include "ops/cpu/parallel.h"

#include <omp.h>

#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/cpu_threads.h"
#include "ops/cpu/internal/fixed_team_size.h"
#include "ops/cpu/internal/team_slot.h"
#include "ops/cpu/thread_pool.h"

namespace dagrad {

int64_t MaxParallelChunks() { return omp_in_parallel() || InChunk() ? 1 : NumThreads(); }

void ParallelChunks(int64_t n, int64_t threads, int64_t most_chunks,
                    absl::FunctionRef<void(int64_t, int64_t)> f) {
  if (!ShareWork()) {
    const TeamSlot team;
    if (!team.held()) {  // another thread's team has the cores
      f(0, n);
      return;
    }
    const FixedTeamSize fixed;  // the count set is the count used, OMP_DYNAMIC or not
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < threads; ++c) {
      f(n * c / threads, n * (c + 1) / threads);
    }
    return;
  }
  const int64_t chunks = std::min(most_chunks, threads * kChunksPerThread);
  RunChunks(chunks, static_cast<int>(threads),
            [&](int64_t c) { f(n * c / chunks, n * (c + 1) / chunks); });
}

}  // namespace dagrad
