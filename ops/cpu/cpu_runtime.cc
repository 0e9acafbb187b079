#include "ops/cpu/cpu_runtime.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/base/call_once.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/cpu/cpu_budget.h"
#include "ops/cpu/cpu_threads.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/fixed_team_size.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/internal/team_slot.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/thread_pool.h"

extern "C" {
#include <blis.h>
}

namespace dagrad {
namespace {

struct CpuState {
  absl::Status status;
  std::string chosen_by = "BLIS";
  std::string features;
  bool copy_column_b = false;  // CopiesColumnB of the active kernel set
};

CpuState& State() {
  static CpuState* state = new CpuState();
  return *state;
}

// The instructions of BLIS's skx and haswell sets are those of dagrad's
// avx512 and avx2 kernel levels.
bool HasAvx512() { return CpuHasInstructionsOf(CpuIsa::kAvx512); }
bool HasAvx2Fma() { return CpuHasInstructionsOf(CpuIsa::kAvx2); }

// Instructions a kernel set needs beyond dagrad's levels; false off x86-64.
#if defined(__x86_64__)
bool HasAvx() { return __builtin_cpu_supports("avx"); }
bool HasFma4() { return __builtin_cpu_supports("fma4"); }  // AMD family 15h only
bool HasXeonPhiAvx512() {
  return __builtin_cpu_supports("avx512er") && __builtin_cpu_supports("avx512pf");
}
#else
bool HasAvx() { return false; }
bool HasFma4() { return false; }
bool HasXeonPhiAvx512() { return false; }
#endif

std::string FeatureString() {
  std::vector<std::string> f;
#if defined(__x86_64__)
#define DAGRAD_FEATURE(name) \
  if (__builtin_cpu_supports(name)) f.push_back(name)
  DAGRAD_FEATURE("avx512f");
  DAGRAD_FEATURE("avx512dq");
  DAGRAD_FEATURE("avx512bw");
  DAGRAD_FEATURE("avx512vl");
  DAGRAD_FEATURE("avx512bf16");
  DAGRAD_FEATURE("avx2");
  DAGRAD_FEATURE("fma");
  DAGRAD_FEATURE("avx");
#undef DAGRAD_FEATURE
#endif
  return absl::StrJoin(f, " ");
}

// CanRun is true when this CPU has the instructions kernel set `id` uses.
bool CanRun(int id) {
  switch (static_cast<arch_t>(id)) {
    case BLIS_ARCH_SKX:
      return HasAvx512();
    case BLIS_ARCH_KNL:  // Xeon Phi's AVX-512 extensions, which no other CPU has
      return HasAvx512() && HasXeonPhiAvx512();
    case BLIS_ARCH_HASWELL:
    case BLIS_ARCH_ZEN:
    case BLIS_ARCH_ZEN2:
    case BLIS_ARCH_ZEN3:
      return HasAvx2Fma();
    // AMD's family 15h sets use FMA4, which only those CPUs have (not Zen).
    case BLIS_ARCH_EXCAVATOR:
    case BLIS_ARCH_STEAMROLLER:
    case BLIS_ARCH_PILEDRIVER:
    case BLIS_ARCH_BULLDOZER:
      return HasAvx() && HasFma4();
    case BLIS_ARCH_SANDYBRIDGE:
      return HasAvx();
    case BLIS_ARCH_PENRYN:
#if defined(__x86_64__)
      return true;
#else
      return false;
#endif
    // aarch64's NEON sets (BLIS picks among them itself, see SelectArch);
    // the SVE ones are left out: they need SVE, which NEON does not imply.
    case BLIS_ARCH_FIRESTORM:
    case BLIS_ARCH_THUNDERX2:
    case BLIS_ARCH_CORTEXA57:
    case BLIS_ARCH_CORTEXA53:
#if defined(__aarch64__)
      return true;
#else
      return false;
#endif
    case BLIS_ARCH_GENERIC:
      return true;
    default:
      return false;  // other ISAs (32-bit ARM, POWER), KNC and SVE
  }
}

// CopiesColumnB is true for the kernel sets whose sgemm runs a tall product
// with a column-stored B (x·wᵀ, a linear layer's forward) slower than with
// the same B stored by rows: BLIS 0.9's AVX2 sets. One Zen 5 core, m =
// 2048, (n, k) = (384, 128), (512, 128), (128, 128), (128, 512): 14-19%
// faster with B copied to rows (copy included) under haswell, zen, zen2 and
// zen3; skx, sandybridge and penryn gain nothing (-5 to +0%).
bool CopiesColumnB(arch_t id) {
  return id == BLIS_ARCH_HASWELL || id == BLIS_ARCH_ZEN || id == BLIS_ARCH_ZEN2 ||
         id == BLIS_ARCH_ZEN3;
}

// The kernel sets Debian builds, fastest first: x86-64's, then aarch64's
// (CanRun keeps this CPU's).
constexpr arch_t kCandidates[] = {BLIS_ARCH_SKX,       BLIS_ARCH_ZEN3,      BLIS_ARCH_HASWELL,
                                  BLIS_ARCH_SANDYBRIDGE, BLIS_ARCH_PENRYN,  BLIS_ARCH_FIRESTORM,
                                  BLIS_ARCH_THUNDERX2, BLIS_ARCH_CORTEXA57, BLIS_ARCH_CORTEXA53,
                                  BLIS_ARCH_GENERIC};

// ValidChoices lists every kernel set this CPU can run: dagrad's
// candidates first, fastest first, then the others BLIS has.
std::string ValidChoices() {
  std::vector<std::string> names;
  auto add = [&names](arch_t id) {
    const std::string name = absl::StrCat(bli_arch_string(id), " (", static_cast<int>(id), ")");
    if (CanRun(id) && !absl::c_linear_search(names, name)) names.push_back(name);
  };
  for (arch_t id : kCandidates) add(id);
  for (int id = 0; id < BLIS_NUM_ARCHS; ++id) add(static_cast<arch_t>(id));
  return absl::StrJoin(names, ", ");
}

absl::Status SelectArch() {
  CpuState& state = State();
  state.features = FeatureString();
  const char* env = std::getenv("BLIS_ARCH_TYPE");
  if (env != nullptr) {
    const std::string text = absl::AsciiStrToLower(absl::StripAsciiWhitespace(env));
    int id = -1;
    if (!absl::SimpleAtoi(text, &id)) {
      id = -1;  // a failed SimpleAtoi leaves 0, skx's id
      for (int i = 0; i < BLIS_NUM_ARCHS; ++i) {
        if (text == bli_arch_string(static_cast<arch_t>(i))) id = i;
      }
    }
    if (id < 0 || id >= BLIS_NUM_ARCHS || !CanRun(id)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "BLIS_ARCH_TYPE='", env, "' is not a BLIS kernel set this CPU can run; "
          "valid: ", ValidChoices(), ", or unset it to let dagrad choose"));
    }
    // BLIS 0.9 reads only numeric ids.
    setenv("BLIS_ARCH_TYPE", absl::StrCat(id).c_str(), 1);
    state.chosen_by = "BLIS_ARCH_TYPE";
  } else {
#if defined(__x86_64__)
    // On x86-64 dagrad picks (skx over BLIS's own zen3 choice on Zen 4/5);
    // elsewhere BLIS's own choice from the CPU stands (chosen_by "BLIS").
    for (arch_t id : kCandidates) {
      if (id != BLIS_ARCH_GENERIC && CanRun(id)) {
        setenv("BLIS_ARCH_TYPE", absl::StrCat(static_cast<int>(id)).c_str(), 1);
        state.chosen_by = "cpu features";
        break;
      }
    }
#endif
  }
  // Initialise before any query: BLIS 0.9 aborts when its arch is queried
  // with BLIS_ARCH_TYPE set and the library not yet initialised.
  bli_init();
  state.copy_column_b = CopiesColumnB(bli_arch_query_id());
  return absl::OkStatus();
}

absl::once_flag configure_once;

int HardwareThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// EnvThreads is DAGRAD_NUM_THREADS when it is set to a valid count.
absl::StatusOr<int> EnvThreads(const char* env) {
  int n;
  if (!absl::SimpleAtoi(env, &n) || n < 1 || n > MaxThreads()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "DAGRAD_NUM_THREADS='", env, "' is not a thread count in [1, ", MaxThreads(),
        "] (4 x the ", HardwareThreads(), " hardware threads)"));
  }
  return n;
}

absl::Status CheckThreadsEnv() {
  const char* env = std::getenv("DAGRAD_NUM_THREADS");
  return env == nullptr ? absl::OkStatus() : EnvThreads(env).status();
}

// DefaultThreads is the count before any SetNumThreads, and its source.
ThreadBudget DefaultThreads() {
  if (const char* env = std::getenv("DAGRAD_NUM_THREADS")) {
    absl::StatusOr<int> n = EnvThreads(env);
    if (n.ok()) return {*n, "DAGRAD_NUM_THREADS"};
  }
  ThreadBudget budget = BudgetThreads(ReadCpuLimits());
  if (budget.threads <= omp_get_thread_limit()) return budget;
  budget.threads = omp_get_thread_limit();  // OpenMP's teams hold no more
  absl::StrAppend(&budget.source, "; OMP_THREAD_LIMIT -> ", budget.threads);
  return budget;
}

// The thread count every kernel reads, from any thread: 0 until first use,
// then DAGRAD_NUM_THREADS or the hardware's count, or what SetNumThreads set.
// OpenMP's own setting is per calling thread, so kernels never rely on it:
// ParallelFor and Gemm pass this count explicitly.
std::atomic<int> threads{0};
std::atomic<bool> threads_set{false};  // by SetNumThreads

// BLIS's process-wide default, for BLIS calls that pass no runtime of their
// own (dagrad's Gemm always passes one).
void ApplyThreads(int n) { bli_thread_set_num_threads(n); }

}  // namespace

absl::Status ConfigureCpu() {
  absl::call_once(configure_once, [] {
    State().status = CheckThreadsEnv();
    if (State().status.ok()) State().status = CheckWaitPolicyEnv();
    if (State().status.ok()) State().status = ChooseCpuIsa().status();
    if (State().status.ok()) State().status = SelectArch();
    // Any BLIS call initialises BLIS, so threads are applied only after the
    // kernel set has been chosen.
    if (State().status.ok()) ApplyThreads(NumThreads());
  });
  return State().status;
}

CpuInfo GetCpuInfo() {
  CpuInfo info;
  absl::Status st = ConfigureCpu();
  info.blis_version = bli_info_get_version_str();
  info.blis_arch = st.ok() ? bli_arch_string(bli_arch_query_id()) : "unconfigured";
  info.chosen_by = State().chosen_by;
  info.cpu_features = State().features;
  info.threads = NumThreads();
  info.threads_source = threads_set.load() ? "SetNumThreads" : DefaultThreads().source;
  info.wait_policy = WaitPolicyName(ActiveWaitPolicy());
  return info;
}

int MaxThreads() { return 4 * HardwareThreads(); }

absl::Status SetNumThreads(int n) {
  if (n > MaxThreads()) {
    return absl::InvalidArgumentError(
        absl::StrCat("thread count ", n, " is above the limit of ", MaxThreads(), " (4 x the ",
                     HardwareThreads(), " hardware threads)"));
  }
  threads.store(n < 1 ? 1 : n, std::memory_order_relaxed);
  threads_set.store(true);
  if (ConfigureCpu().ok()) ApplyThreads(NumThreads());
  return absl::OkStatus();
}

int NumThreads() {
  int n = threads.load(std::memory_order_relaxed);
  if (n != 0) return n;
  int expected = 0;
  threads.compare_exchange_strong(expected, DefaultThreads().threads, std::memory_order_relaxed);
  return threads.load(std::memory_order_relaxed);
}

namespace {

// BlisGemmEx is BLIS's typed gemm for T: s for float, d for double.
template <typename T>
constexpr auto BlisGemmEx() {
  if constexpr (std::is_same_v<T, float>) {
    return bli_sgemm_ex;
  } else {
    return bli_dgemm_ex;
  }
}

// BlisGemv is BLIS's typed gemv for T.
template <typename T>
constexpr auto BlisGemv() {
  if constexpr (std::is_same_v<T, float>) {
    return bli_sgemv;
  } else {
    return bli_dgemv;
  }
}

// RowsOfB copies a column-stored B (k x n, element (p, j) at b[j * csb + p])
// to rows of n in a buffer of the calling thread, in 8 x 8 tiles.
template <typename T>
const T* RowsOfB(int64_t k, int64_t n, const T* b, int64_t csb) {
  thread_local std::vector<T> rows;
  rows.resize(k * n);
  T* out = rows.data();
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    for (int64_t p0 = 0; p0 < k; p0 += 8) {
      const int64_t j1 = std::min(j0 + 8, n), p1 = std::min(p0 + 8, k);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t p = p0; p < p1; ++p) out[p * n + j] = b[j * csb + p];
      }
    }
  }
  return out;
}

// CopyColumnB is true when a float product with a column-stored B should
// run on a row-stored copy (CopiesColumnB; measured for sgemm only): a tall
// product (m >= 4 n; at 256^3 or 1024^3 the copy costs more than it saves)
// whose B is small.
bool CopyColumnB(int64_t m, int64_t n, int64_t k, int64_t rsb, int64_t csb) {
  return State().copy_column_b && rsb == 1 && csb != 1 && m >= 4 * n && k * n <= (1 << 18);
}

// Product holds one BLIS product's operands: C = alpha A B + beta C, A m x k,
// B k x n, C m x n, each with its row and column strides.
template <typename T>
struct Product {
  int64_t m, n, k;
  T alpha;
  const T* a;
  int64_t rsa, csa;
  const T* b;
  int64_t rsb, csb;
  T beta;
  T* c;
  int64_t rsc, csc;
};

// CallBlis runs p in BLIS on `threads` threads; with `sup` false, on BLIS's
// conventional path whatever p's size.
template <typename T>
void CallBlis(const Product<T>& p, int threads, bool sup) {
  // While another thread's team has the cores, this call runs alone.
  const TeamSlot team(/*wanted=*/threads > 1);
  // BLIS aborts on a team smaller than asked: none above OMP_THREAD_LIMIT,
  // none dynamic.
  const FixedTeamSize fixed;
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(team.held() ? std::min(threads, omp_get_thread_limit()) : 1, &rntm);
  if (!sup) bli_rntm_disable_l3_sup(&rntm);
  T alpha = p.alpha, beta = p.beta;
  BlisGemmEx<T>()(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, p.m, p.n, p.k, &alpha,
                  const_cast<T*>(p.a), p.rsa, p.csa, const_cast<T*>(p.b), p.rsb, p.csb, &beta,
                  p.c, p.rsc, p.csc, nullptr, &rntm);
}

// Block is p's rows [begin, end) when `rows`, else its columns.
template <typename T>
Product<T> Block(Product<T> p, bool rows, int64_t begin, int64_t end) {
  if (rows) {
    p.m = end - begin;
    p.a += begin * p.rsa;
    p.c += begin * p.rsc;
  } else {
    p.n = end - begin;
    p.b += begin * p.csb;
    p.c += begin * p.csc;
  }
  return p;
}

// The blocks per thread of a shared product: each block packs all of B
// (or A), so more blocks cost more packing: 2 per thread costs 3-5% over
// BLIS's own split on the GPT's products, 4 costs 10-15%, on one Zen 5.
constexpr int64_t kBlocksPerThread = 2;

// ShareProduct runs p as blocks of C's rows (or columns, when it has more
// of those), each a BLIS call on one thread, that `threads` threads of
// dagrad's pool take in turn (ops/cpu/thread_pool.h), instead of BLIS's
// static split, whose barrier waits for a thread that lost its core. Each
// element of C is the same dot product, in BLIS's fixed k order, as on one
// thread: blocks begin at multiples of both register tile sizes (MR, NR),
// and run BLIS's conventional path, as the whole product does (so a block's
// size must not move it onto the small-product path: sup is off for them).
// False, running nothing, for a product on BLIS's small-product path (one
// dimension under its threshold) or with fewer than two blocks.
template <typename T>
bool ShareProduct(const Product<T>& p, int threads) {
  const num_t dt = std::is_same_v<T, float> ? BLIS_FLOAT : BLIS_DOUBLE;
  cntx_t* cntx = bli_gks_query_cntx();
  if (bli_cntx_l3_sup_thresh_is_met(dt, p.m, p.n, p.k, cntx)) return false;
  const int64_t tile = std::lcm(bli_cntx_get_blksz_def_dt(dt, BLIS_MR, cntx),
                                bli_cntx_get_blksz_def_dt(dt, BLIS_NR, cntx));
  const bool rows = p.m >= p.n;
  const int64_t length = rows ? p.m : p.n, tiles = length / tile;
  const int64_t blocks = std::min<int64_t>(tiles, threads * kBlocksPerThread);
  if (blocks < 2) return false;
  RunChunks(blocks, threads, [&](int64_t i) {
    const int64_t end = i + 1 == blocks ? length : tiles * (i + 1) / blocks * tile;
    CallBlis(Block(p, rows, tiles * i / blocks * tile, end), 1, /*sup=*/false);
  });
  return true;
}

// SmallRows runs a product that IsSmallGemm takes with SmallGemm: on one
// thread up to 2^18 multiply-adds, above that in blocks of rows over
// `threads` (ParallelChunks: OpenMP's team or dagrad's pool, as the wait
// policy says). Each element's sum is the same chain of multiply-adds in
// any block, so any thread count gives the same bits (a larger product
// going to BLIS at 2 threads only rounded as BLIS's kernel set does, which
// need not be as this level does: a baseline level beside skx's FMA).
template <typename T>
void SmallRows(const CpuKernels& kernels, int threads, const Product<T>& p) {
  constexpr int64_t kMinRows = 8;
  const int64_t most_blocks = p.m / kMinRows;
  auto rows = [&](int64_t begin, int64_t end) {
    SmallGemm<T>(kernels, end - begin, p.n, p.k, p.alpha, p.a + begin * p.rsa, p.rsa, p.csa, p.b,
                 p.rsb, p.csb, p.beta, p.c + begin * p.rsc, p.rsc);
  };
  const int64_t split = std::min<int64_t>({threads, MaxParallelChunks(), most_blocks});
  if (split < 2 || p.m * p.n * p.k <= (int64_t{1} << 18)) {
    rows(0, p.m);
    return;
  }
  ParallelChunks(p.m, split, most_blocks, rows);
}

}  // namespace

template <typename T>
absl::Status Gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t rsa,
                  int64_t csa, const T* b, int64_t rsb, int64_t csb, T beta, T* c, int64_t rsc,
                  int64_t csc, bool one_thread) {
  if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
  const CpuKernels& kernels = **ActiveKernels();  // ok: ConfigureCpu checked it
  const int threads = one_thread ? 1 : NumThreads();
  const Product<T> p{m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc};
  if (IsSmallGemm(kernels, m, n, k) && csc == 1) {
    SmallRows(kernels, threads, p);
    return absl::OkStatus();
  }
  if (m == 1) {
    // One row (a token's step in generation): c = B^T a as a gemv, which
    // reads B once, where gemm would pack B and compute a whole
    // micro-tile of rows for the one.
    BlisGemv<T>()(BLIS_TRANSPOSE, BLIS_NO_CONJUGATE, k, n, &alpha, const_cast<T*>(b), rsb, csb,
                  const_cast<T*>(a), csa, &beta, c, csc);
    return absl::OkStatus();
  }
  Product<T> q = p;
  if (std::is_same_v<T, float> && CopyColumnB(m, n, k, rsb, csb)) {
    q.b = RowsOfB(k, n, b, csb);
    q.rsb = n;
    q.csb = 1;
  }
  // The thread count is passed on every call, so it holds in any calling
  // thread; one thread when asked (the caller spreads products over them).
  // While the kernels share work (ShareWork) the threads take blocks of the
  // product; one that cannot be shared runs on one, as BLIS's own split
  // would wait at its barrier for a thread that lost its core.
  if (threads > 1 && ShareWork()) {
    if (!ShareProduct(q, threads)) CallBlis(q, 1, /*sup=*/true);
    return absl::OkStatus();
  }
  CallBlis(q, threads, /*sup=*/true);
  return absl::OkStatus();
}

template absl::Status Gemm<float>(int64_t, int64_t, int64_t, float, const float*, int64_t,
                                  int64_t, const float*, int64_t, int64_t, float, float*,
                                  int64_t, int64_t, bool);
template absl::Status Gemm<double>(int64_t, int64_t, int64_t, double, const double*, int64_t,
                                   int64_t, const double*, int64_t, int64_t, double, double*,
                                   int64_t, int64_t, bool);

}  // namespace dagrad
