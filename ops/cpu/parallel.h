// ops/cpu/parallel.h
//
// ParallelFor splits [0, n) into contiguous chunks over NumThreads()
// threads. They are OpenMP's, one chunk per thread, the same runtime BLIS
// uses, so the two never oversubscribe the cores: BLIS runs between our
// parallel regions, not inside them. While the kernels share their work
// (ShareWork, ops/cpu/cpu_threads.h: busy cores under the `auto` wait
// policy) they are dagrad's pool's instead (ops/cpu/thread_pool.h): the
// loop is cut into up to kChunksPerThread chunks per thread, which the
// threads take in turn, so a thread that loses its core holds up one
// chunk, not a share of the loop. The count
// is passed explicitly, so it holds in every calling thread (OpenMP's own
// setting is per thread). Chunks are at least `grain` long; small loops stay
// on the calling thread, and so does a loop inside another's chunk. The
// parallel work lives in the library (ops/cpu/parallel.cc), so a ParallelFor
// compiled anywhere else (a tool, a user's own op built without -fopenmp)
// runs in parallel too: f is called once per chunk, through a reference.
// f must give the same result whatever the chunks are: every kernel's
// result is the same on any thread count.
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

// The chunks per thread of a ParallelFor while the kernels share work.
inline constexpr int64_t kChunksPerThread = 4;

// ParallelChunks runs f over [0, n) on `threads` (>= 2) threads, in
// `threads` equal chunks, or while the kernels share work in at most
// `most_chunks` (>= threads); ParallelFor's work, compiled with OpenMP.
void ParallelChunks(int64_t n, int64_t threads, int64_t most_chunks,
                    absl::FunctionRef<void(int64_t, int64_t)> f);

// MaxParallelChunks is NumThreads(), or 1 inside a parallel region or a
// pool's chunk.
int64_t MaxParallelChunks();

template <typename F>
void ParallelFor(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  const int64_t most = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int64_t threads = std::min<int64_t>(MaxParallelChunks(), most);
  if (threads <= 1) {
    f(int64_t{0}, n);
    return;
  }
  ParallelChunks(n, threads, most, f);
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_PARALLEL_H_
