// Gemm's products on several threads (ops/cpu/internal/gemm.h): while the
// kernels share work (the share wait policy here) the threads take blocks
// of C (each a one-thread BLIS call), under spin BLIS splits the product
// itself. Either way every
// element of C is summed over k in one fixed order, so C has the same bits
// on any thread count: row blocks, column blocks, transposed and strided
// operands, a k past BLIS's k blocking, alpha and beta. ctest runs these
// under BLIS's zen3 kernels too (gemm_shared_zen3), whose small-product
// path has thresholds that skx's has not, and where dagrad's level and
// BLIS's kernels round differently (gemm_shared_baseline,
// gemm_shared_sandybridge).

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/cpu_threads.h"
#include "ops/cpu/internal/gemm.h"

namespace dagrad {
namespace {

// Layout is a product's shape and how its operands are stored.
struct Layout {
  int64_t m, n, k;
  bool a_by_columns = false, b_by_columns = false;
  int64_t c_padding = 0;  // extra elements at the end of each row of C
  double alpha = 1, beta = 0;
};

template <typename T>
std::vector<T> Draw(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(u(gen));
  return v;
}

// Product is C after Gemm on `threads` threads.
template <typename T>
std::vector<T> Product(const Layout& l, int threads) {
  EXPECT_TRUE(SetNumThreads(threads).ok());
  const std::vector<T> a = Draw<T>(l.m * l.k, 1), b = Draw<T>(l.k * l.n, 2);
  const int64_t rsc = l.n + l.c_padding;
  std::vector<T> c = Draw<T>(l.m * rsc, 3);
  const absl::Status st = Gemm<T>(
      l.m, l.n, l.k, static_cast<T>(l.alpha), a.data(), l.a_by_columns ? 1 : l.k,
      l.a_by_columns ? l.m : 1, b.data(), l.b_by_columns ? 1 : l.n, l.b_by_columns ? l.k : 1,
      static_cast<T>(l.beta), c.data(), rsc, 1);
  EXPECT_TRUE(st.ok()) << st;
  return c;
}

template <typename T>
void ExpectSameBitsOnAnyThreadCount(const Layout& l) {
  const std::vector<T> one = Product<T>(l, 1);
  for (int threads : {2, 3, 4}) {
    const std::vector<T> many = Product<T>(l, threads);
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(T)), 0)
        << l.m << " x " << l.n << " x " << l.k << " on " << threads << " threads, sizeof "
        << sizeof(T);
  }
}

const Layout kLayouts[] = {
    {.m = 768, .n = 384, .k = 128},                                   // row blocks
    {.m = 128, .n = 512, .k = 768, .a_by_columns = true},             // column blocks
    {.m = 300, .n = 250, .k = 1500, .b_by_columns = true},            // k blocked
    {.m = 520, .n = 264, .k = 300, .c_padding = 3, .beta = 1},        // accumulates
    {.m = 1000, .n = 700, .k = 260, .a_by_columns = true, .b_by_columns = true, .alpha = 0.5,
     .beta = 0.25},
    {.m = 130, .n = 140, .k = 90},                                    // too small to share
    // SmallGemm's products past 2^18 multiply-adds, its rows split over the
    // threads (they went to BLIS on two, which rounds as its own kernel set
    // does: ctest runs these at the baseline level, without FMA, beside
    // skx's FMA, and under sandybridge's BLIS, without FMA, beside avx512).
    {.m = 64, .n = 64, .k = 128},
    {.m = 250, .n = 100, .k = 100, .a_by_columns = true, .beta = 1},
    {.m = 129, .n = 200, .k = 160, .b_by_columns = true, .c_padding = 5},
};

class SharedGemm : public ::testing::TestWithParam<WaitPolicy> {
 protected:
  void SetUp() override {
    if (absl::Status st = ConfigureCpu(); !st.ok()) GTEST_SKIP() << st;
    SetWaitPolicy(GetParam());
  }
  void TearDown() override {
    SetWaitPolicy(saved_policy_);
    EXPECT_TRUE(SetNumThreads(saved_threads_).ok());
  }
  WaitPolicy saved_policy_ = ActiveWaitPolicy();
  int saved_threads_ = NumThreads();
};

TEST_P(SharedGemm, FloatSameBitsOnAnyThreadCount) {
  for (const Layout& l : kLayouts) ExpectSameBitsOnAnyThreadCount<float>(l);
}

TEST_P(SharedGemm, DoubleSameBitsOnAnyThreadCount) {
  for (const Layout& l : kLayouts) ExpectSameBitsOnAnyThreadCount<double>(l);
}

INSTANTIATE_TEST_SUITE_P(Policies, SharedGemm,
                         ::testing::Values(WaitPolicy::kShare, WaitPolicy::kSpin),
                         [](const auto& info) { return WaitPolicyName(info.param); });

}  // namespace
}  // namespace dagrad
