// ops/cpu/thread_pool.h
//
// dagrad's own pool of compute threads, which share a kernel's work chunk by
// chunk and give their core away when they have none: the `auto` wait
// policy's threads (ops/cpu/cpu_threads.h; `spin` keeps OpenMP's).
//
// RunChunks(chunks, threads, f) calls f(c) once for every c in [0, chunks).
// The calling thread and up to threads - 1 pool threads take the chunks one
// at a time from a shared counter, so a thread that loses its core holds up
// at most the chunk it is running while the others take the rest; the
// caller returns when every chunk has run. A pool thread with nothing to do
// spins for kChunkSpinNs (the next kernel usually follows within
// microseconds), then sleeps on a futex, which leaves the core to whoever
// else wants it. The caller waits for the last chunks the same way.
//
// The pool is process-wide and runs one RunChunks at a time: a RunChunks
// from another thread while one is running, and one from inside a chunk
// (InChunk()), runs all its chunks on its calling thread, in order. So do
// RunChunks with threads <= 1 or one chunk, and one whose pool threads
// cannot be started (the system is out of threads): RunChunks has no
// failure mode. Which chunk runs on which thread varies from call to call;
// a kernel whose result must not depend on the thread count makes each
// chunk's result depend only on the chunk (ops/cpu/parallel.h).
//
//   std::vector<int> hits(100);
//   RunChunks(100, 2, [&](int64_t c) { hits[c] += 1; });   // each 1

#ifndef DAGRAD_OPS_CPU_THREAD_POOL_H_
#define DAGRAD_OPS_CPU_THREAD_POOL_H_

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace dagrad {

// How long an idle pool thread, or a caller waiting for the last chunks,
// spins before it sleeps.
inline constexpr int64_t kChunkSpinNs = 50'000;

// The most threads a RunChunks uses (the caller and kMaxPoolThreads - 1 pool
// threads); more are treated as this many.
inline constexpr int kMaxPoolThreads = 256;

// RunChunks calls f(c) for each c in [0, chunks) exactly once, on the
// calling thread and up to threads - 1 pool threads; chunks <= 0 calls
// nothing.
void RunChunks(int64_t chunks, int threads, absl::FunctionRef<void(int64_t)> f);

// InChunk is true on a thread while it runs a chunk of a RunChunks.
bool InChunk();

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_THREAD_POOL_H_
