// ops/cpu/parallel.h
//
// ParallelFor splits [0, n) into contiguous chunks over ComputeThreads()
// threads: NumThreads(), or one while the cores are busy (ops/cpu/cpu_threads.h).
// They are OpenMP's, the same runtime BLIS uses, so the two never
// oversubscribe the cores: BLIS runs between our parallel regions, not
// inside them. The count
// is passed explicitly, so it holds in every calling thread (OpenMP's own
// setting is per thread). Chunks are at least `grain` long; small loops stay
// on the calling thread, and so does a loop inside another's chunk. The
// parallel region lives in the library (ops/cpu/parallel.cc), so a ParallelFor
// compiled anywhere else (a tool, a user's own op built without -fopenmp)
// runs in parallel too: f is called once per chunk, through a reference.
//
// kElementGrain is the grain of a loop over elements (16k: below that a
// thread's start costs more than it saves); RowGrain(n) is the grain for
// rows of n elements: kElementGrain elements per chunk, and at least one row.
//
//   // setup: Rows
//   ParallelFor(rows, RowGrain(n), [&](int64_t begin, int64_t end) {
//     for (int64_t r = begin; r < end; ++r) SoftmaxRow(r);
//   });

#ifndef DAGRAD_OPS_CPU_PARALLEL_H_
#define DAGRAD_OPS_CPU_PARALLEL_H_

#include <algorithm>
#include <cstdint>

#include "absl/functional/function_ref.h"

namespace dagrad {

inline constexpr int64_t kElementGrain = 16384;

inline int64_t RowGrain(int64_t row_elements) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(row_elements, 1));
}

// ParallelChunks runs f over `chunks` (>= 2) equal chunks of [0, n) on as
// many OpenMP threads; ParallelFor's work, compiled with OpenMP.
void ParallelChunks(int64_t n, int64_t chunks, absl::FunctionRef<void(int64_t, int64_t)> f);

// MaxParallelChunks is ComputeThreads(), or 1 inside a parallel region.
int64_t MaxParallelChunks();

template <typename F>
void ParallelFor(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  const int64_t chunks =
      std::min<int64_t>(MaxParallelChunks(), std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1) {
    f(int64_t{0}, n);
    return;
  }
  ParallelChunks(n, chunks, f);
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_PARALLEL_H_
