#include "ops/cpu/thread_pool.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace dagrad {
namespace {

using ChunkFn = absl::FunctionRef<void(int64_t)>;

// The most chunks one posting holds: the chunk counter is the low 32 bits of
// Pool::word. A larger RunChunks posts several times.
constexpr int64_t kMaxPostedChunks = int64_t{1} << 31;

thread_local bool in_chunk = false;


int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Pool is the posted work: a chunk counter tagged with the posting's
// generation, so that a thread that wakes late for an old posting can never
// take a chunk of a newer one with the old posting's function.
struct Pool {
  std::mutex post;                   // one RunChunks at a time
  std::atomic<uint64_t> word{0};     // generation << 32 | next chunk
  std::atomic<uint32_t> generation{0};
  std::atomic<const ChunkFn*> fn{nullptr};
  std::atomic<uint32_t> chunks{0};
  std::atomic<uint32_t> done{0};
  std::atomic<int> helpers{0};       // pool threads 0 .. helpers - 1 take part
  int started = 0;                   // pool threads running (under post)
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: its threads outlive main
  return *pool;
}

// SpinThenWait returns once `value` differs from `old`: it spins for
// kChunkSpinNs, then sleeps on the futex until a notify.
void SpinThenWait(const std::atomic<uint32_t>& value, uint32_t old) {
  const int64_t until = NowNs() + kChunkSpinNs;
  while (value.load() == old && NowNs() < until) Pause();
  while (value.load() == old) value.wait(old);
}

// TakeChunks runs the chunks of posting `gen` that no other thread has
// taken, one at a time, and returns when none is left (or a newer posting
// replaced it).
void TakeChunks(Pool& p, uint32_t gen) {
  for (;;) {
    const ChunkFn* fn = p.fn.load();
    const uint32_t chunks = p.chunks.load();
    uint64_t w = p.word.load();
    if (static_cast<uint32_t>(w >> 32) != gen || static_cast<uint32_t>(w) >= chunks) return;
    if (!p.word.compare_exchange_weak(w, w + 1)) continue;
    in_chunk = true;
    (*fn)(static_cast<int64_t>(static_cast<uint32_t>(w)));
    in_chunk = false;
    if (p.done.fetch_add(1) + 1 == chunks) p.done.notify_all();
  }
}

// ThreadStart is what a pool thread starts with: its index, and the
// generation before the posting it was started for, so that it takes part
// in that posting however late it starts.
struct ThreadStart {
  int index;
  uint32_t seen;
};

void* PoolThread(void* arg) {
  const ThreadStart start = *static_cast<ThreadStart*>(arg);
  delete static_cast<ThreadStart*>(arg);
  Pool& p = ThePool();
  uint32_t seen = start.seen;
  for (;;) {
    SpinThenWait(p.generation, seen);
    seen = p.generation.load();
    if (start.index < p.helpers.load()) TakeChunks(p, seen);
  }
  return nullptr;
}

// StartThreads starts pool threads until `want` run, or one cannot be
// started; it returns how many run. Called under Pool::post, before Post.
int StartThreads(Pool& p, int want) {
  while (p.started < want) {
    auto* start = new ThreadStart{p.started, p.generation.load()};
    pthread_t thread;
    if (pthread_create(&thread, nullptr, PoolThread, start) != 0) {
      delete start;
      break;
    }
    pthread_detach(thread);
    ++p.started;
  }
  return std::min(p.started, want);
}

void RunInline(int64_t begin, int64_t end, ChunkFn f) {
  const bool outer = in_chunk;
  in_chunk = true;
  for (int64_t c = begin; c < end; ++c) f(c);
  in_chunk = outer;
}

// Post hands chunks [0, chunks) of f to `helpers` pool threads and the
// caller, and returns when all have run. Called under Pool::post.
void Post(Pool& p, uint32_t chunks, int helpers, const ChunkFn& f) {
  const uint32_t gen = p.generation.load() + 1;
  // Exhausted under the new generation first: a late thread of the old
  // posting fails its claim from here on, whatever fn it read.
  p.word.store(uint64_t{gen} << 32 | 0xffffffffu);
  p.fn.store(&f);
  p.chunks.store(chunks);
  p.done.store(0);
  p.helpers.store(helpers);
  p.word.store(uint64_t{gen} << 32);
  p.generation.store(gen);
  p.generation.notify_all();
  TakeChunks(p, gen);
  for (uint32_t d = p.done.load(); d != chunks; d = p.done.load()) SpinThenWait(p.done, d);
}

}  // namespace

bool InChunk() { return in_chunk; }

void RunChunks(int64_t chunks, int threads, ChunkFn f) {
  if (chunks <= 0) return;
  Pool& p = ThePool();
  if (threads <= 1 || chunks == 1 || in_chunk || !p.post.try_lock()) {
    RunInline(0, chunks, f);
    return;
  }
  std::lock_guard<std::mutex> hold(p.post, std::adopt_lock);
  const int64_t most = std::min<int64_t>({threads, kMaxPoolThreads, chunks});
  const int helpers = StartThreads(p, static_cast<int>(most) - 1);
  if (helpers == 0) {
    RunInline(0, chunks, f);
    return;
  }
  for (int64_t base = 0; base < chunks; base += kMaxPostedChunks) {
    const int64_t count = std::min(kMaxPostedChunks, chunks - base);
    auto shift = [&](int64_t c) { f(base + c); };
    Post(p, static_cast<uint32_t>(count), helpers, ChunkFn(shift));
  }
}

}  // namespace dagrad
