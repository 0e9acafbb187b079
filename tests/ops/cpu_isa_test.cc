// The kernel levels of ops/cpu/internal/cpu_isa.h: DAGRAD_CPU_ISA's parsing, and every
// dispatched kernel of every level this CPU runs against the baseline level
// in one process: bit for bit where the arithmetic is the same (Philox's
// integer rounds), within the stated tolerance where a level fuses
// multiply-adds (ops/cpu/kernels/cpu_kernels.h). The baseline itself is checked
// against plain references computed here.

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/philox.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/internal/vector_math.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(CpuIsa, BaselineIsAlwaysRunnableAndLevelsAscend) {
  const std::vector<CpuIsa> runnable = CpuIsaRunnable();
  ASSERT_FALSE(runnable.empty());
  EXPECT_EQ(runnable.front(), CpuIsa::kBaseline);
  for (size_t i = 1; i < runnable.size(); ++i) EXPECT_LT(runnable[i - 1], runnable[i]);
  for (CpuIsa isa : runnable) EXPECT_EQ(KernelsFor(isa).isa, CpuIsaName(isa));
}

TEST(CpuIsa, ParseLowersToAnyRunnableLevel) {
  const std::vector<CpuIsa> all = {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512};
  EXPECT_EQ(*ParseCpuIsa("avx2", all), CpuIsa::kAvx2);
  EXPECT_EQ(*ParseCpuIsa(" Baseline\n", all), CpuIsa::kBaseline);
  EXPECT_EQ(*ParseCpuIsa("avx512", all), CpuIsa::kAvx512);
}

TEST(CpuIsa, ParseRejectsALevelTheCpuLacksAndListsTheValidOnes) {
  const std::vector<CpuIsa> avx2_cpu = {CpuIsa::kBaseline, CpuIsa::kAvx2};
  EXPECT_STATUS(ParseCpuIsa("avx512", avx2_cpu).status(), absl::StatusCode::kFailedPrecondition,
                "DAGRAD_CPU_ISA='avx512' is a kernel level this CPU (or this build) cannot run; "
                "valid: avx2, baseline (it can only lower the level chosen from the CPU's "
                "features), or unset it");
  EXPECT_STATUS(ParseCpuIsa("sse9", avx2_cpu).status(), absl::StatusCode::kFailedPrecondition,
                "DAGRAD_CPU_ISA='sse9' is not a kernel level; valid: avx2, baseline");
  EXPECT_STATUS(ParseCpuIsa("", {CpuIsa::kBaseline}).status(),
                absl::StatusCode::kFailedPrecondition, "valid: baseline (");
}

// ---- SmallGemm ---------------------------------------------------------------

struct GemmCase {
  int64_t m, n, k;
  bool trans_a, trans_b;
  double alpha, beta;
};

// Every row remainder of every level's block height (up to 8) and column
// remainders of 1, 2, 4, 8 and 16 lanes, transposed operands, alpha and beta,
// B packed and B read in place.
std::vector<GemmCase> GemmCases() {
  std::vector<GemmCase> cases;
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 32}) {
    cases.push_back({m, 32, 32, false, false, 1.0, 0.0});
  }
  for (int64_t n : {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 47, 64, 100, 256}) {
    cases.push_back({7, n, 5, false, true, 1.0, 0.0});
  }
  // B by rows: read in place when n is a multiple of the level's lanes.
  for (int64_t n : {4, 8, 12, 16, 24, 48}) cases.push_back({7, n, 5, false, false, 1.0, 0.5});
  cases.push_back({64, 64, 32, true, false, 0.5, 0.0});
  // 64^3 as q·kᵀ; 2^22 multiply-adds, the avx2 and avx512 levels'
  // small_gemm_max_madds, as q·kᵀ and as p·v.
  cases.push_back({64, 64, 64, false, true, 1.0, 0.0});
  cases.push_back({256, 256, 64, false, true, 1.0, 0.0});
  cases.push_back({256, 64, 256, false, false, 1.0, 0.0});
  cases.push_back({24, 40, 256, true, true, -1.5, 0.25});
  cases.push_back({11, 19, 1, false, false, 2.0, -1.0});
  cases.push_back({5, 6, 0, false, false, 1.0, 0.5});
  return cases;
}

template <typename T>
struct GemmData {
  std::vector<T> a, b, c0;
  int64_t rsa, csa, rsb, csb;
};

template <typename T>
GemmData<T> MakeGemm(const GemmCase& g, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  GemmData<T> d;
  d.a.resize(g.m * g.k);
  d.b.resize(g.k * g.n);
  d.c0.resize(g.m * g.n);
  for (T& v : d.a) v = static_cast<T>(u(rng));
  for (T& v : d.b) v = static_cast<T>(u(rng));
  for (T& v : d.c0) v = static_cast<T>(u(rng));
  // A stored (k x m) when transposed: element (i, p) at p * m + i.
  d.rsa = g.trans_a ? 1 : g.k;
  d.csa = g.trans_a ? g.m : 1;
  d.rsb = g.trans_b ? 1 : g.n;
  d.csb = g.trans_b ? g.k : 1;
  return d;
}

template <typename T>
std::vector<T> RunGemm(const CpuKernels& kernels, const GemmCase& g, const GemmData<T>& d) {
  std::vector<T> c = d.c0;
  SmallGemm<T>(kernels, g.m, g.n, g.k, static_cast<T>(g.alpha), d.a.data(), d.rsa, d.csa,
               d.b.data(), d.rsb, d.csb, static_cast<T>(g.beta), c.data(), g.n);
  return c;
}

// Bound is each element's error allowance around `ref`: `factor` (k + 2)
// eps (|alpha| |A|·|B| + |beta C|), the rounding of a k-term dot product
// and the alpha/beta epilogue (cpu_kernels.h states factor 2 between levels).
template <typename T>
void ExpectWithin(const GemmCase& g, const GemmData<T>& d, const std::vector<T>& got,
                  const std::vector<long double>* ref, int factor) {
  const long double eps = std::numeric_limits<T>::epsilon();
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      long double exact = 0, magnitude = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const long double prod = static_cast<long double>(d.a[i * d.rsa + p * d.csa]) *
                                 d.b[p * d.rsb + j * d.csb];
        exact += prod;
        magnitude += std::fabs(prod);
      }
      const long double c0 = d.c0[i * g.n + j];
      const long double want = ref ? (*ref)[i * g.n + j] : g.alpha * exact + g.beta * c0;
      const long double bound =
          factor * (g.k + 2) * eps * (std::fabs(g.alpha) * magnitude + std::fabs(g.beta * c0));
      ASSERT_LE(std::fabs(got[i * g.n + j] - want), bound)
          << "element (" << i << ", " << j << ") of " << g.m << "x" << g.n << "x" << g.k;
    }
  }
}

template <typename T>
void CheckSmallGemmLevels() {
  std::mt19937 rng(7);
  const CpuKernels& baseline = KernelsFor(CpuIsa::kBaseline);
  for (const GemmCase& g : GemmCases()) {
    const GemmData<T> d = MakeGemm<T>(g, rng);
    const std::vector<T> want = RunGemm(baseline, g, d);
    SCOPED_TRACE(absl::StrCat(g.m, "x", g.n, "x", g.k));
    ExpectWithin<T>(g, d, want, nullptr, 1);  // the reference against the exact product
    const std::vector<long double> ref(want.begin(), want.end());
    for (CpuIsa isa : CpuIsaRunnable()) {
      SCOPED_TRACE(CpuIsaName(isa));
      ExpectWithin<T>(g, d, RunGemm(KernelsFor(isa), g, d), &ref, 2);
    }
  }
}

TEST(CpuIsa, SmallGemmFloatOfEveryLevelWithinTheFmaBound) { CheckSmallGemmLevels<float>(); }
TEST(CpuIsa, SmallGemmDoubleOfEveryLevelWithinTheFmaBound) { CheckSmallGemmLevels<double>(); }

// ---- Philox --------------------------------------------------------------------

TEST(CpuIsa, PhiloxBitsOfEveryLevelEqualTheScalarGenerator) {
  const RandomStream rs{0x123456789abcdefull, 77, 3};
  // Multiples of kPhiloxBlocks: the last batch before the low counter word
  // wraps, and high words of 1 and 2^8 + 1.
  for (uint64_t first : {uint64_t{0}, uint64_t{kPhiloxBlocks}, uint64_t{0x100000000} - kPhiloxBlocks,
                         uint64_t{0x100000000}, (uint64_t{0x101} << 32) + 3 * kPhiloxBlocks}) {
    for (CpuIsa isa : CpuIsaRunnable()) {
      uint32_t batch[4 * kPhiloxBlocks];
      KernelsFor(isa).philox_bits(rs.seed, rs.stream, rs.step, first, batch);
      for (int i = 0; i < 4 * kPhiloxBlocks; ++i) {
        ASSERT_EQ(batch[i], rs.Bits(first * 4 + i))
            << CpuIsaName(isa) << ": first block " << first << ", word " << i;
      }
    }
  }
}

template <typename T>
void CheckDropoutLevels() {
  // Signs, zeros, NaN and infinities over 3 chunks and a partial one.
  const int64_t n = 3 * 4 * kPhiloxBlocks + 37;
  std::vector<T> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>((i % 7) - 3) * T(0.375);
  x[1] = -std::numeric_limits<T>::infinity();
  x[2] = std::numeric_limits<T>::quiet_NaN();
  x[3] = -T(0);
  const RandomStream rs{0xfeedbeefcafe1234ull, 9, 41};
  const uint32_t threshold = 5033165;  // p = 0.3: ceil(0.3 * 2^24)
  const T scale = T(1) / T(0.7);
  // The reference: element i kept iff its word's top 24 bits reach the
  // threshold; x * scale or x * 0.
  std::vector<T> want(n);
  for (int64_t i = 0; i < n; ++i) {
    want[i] = x[i] * ((rs.Bits(i) >> 8) >= threshold ? scale : T(0));
  }
  for (CpuIsa isa : CpuIsaRunnable()) {
    std::vector<T> y(n, T(7));
    const DropoutArgs<T> args = {rs.seed, rs.stream, rs.step, n, threshold, scale, x.data(),
                                 y.data()};
    const auto dropout = [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, float>) {
        KernelsFor(isa).dropout_f32(args, b, e);
      } else {
        KernelsFor(isa).dropout_f64(args, b, e);
      }
    };
    dropout(0, 1);  // chunks split as threads split them
    dropout(1, 4);
    EXPECT_EQ(std::memcmp(y.data(), want.data(), n * sizeof(T)), 0) << CpuIsaName(isa);
    EXPECT_TRUE(std::signbit(y[3])) << CpuIsaName(isa);
  }
}

TEST(CpuIsa, DropoutFloatOfEveryLevelIsBitIdenticalToTheReference) { CheckDropoutLevels<float>(); }
TEST(CpuIsa, DropoutDoubleOfEveryLevelIsBitIdenticalToTheReference) {
  CheckDropoutLevels<double>();
}

// ---- Row kernels: exp-and-sum, layer norm ---------------------------------------

TEST(CpuIsa, ExpShiftSumOfEveryLevelIsBitIdenticalToTheBaseline) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-30.0f, 10.0f);
  for (int64_t n : {0, 1, 15, 16, 17, 255, 256, 257, 1000}) {
    std::vector<float> x(n);
    for (float& v : x) v = u(rng);
    if (n > 3) x[3] = -std::numeric_limits<float>::infinity();  // a masked position: exactly 0
    const float m = 2.5f;
    std::vector<float> want(n);
    const double want_sum =
        KernelsFor(CpuIsa::kBaseline).exp_shift_sum_f32(x.data(), want.data(), n, m);
    // The baseline against std::exp: within 2 ulp per term (VectorExp's bound).
    long double exact = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double e = std::exp(static_cast<double>(x[k] - m));
      exact += e;
      ASSERT_NEAR(want[k], e, 2 * std::numeric_limits<float>::epsilon() * e) << k;
    }
    EXPECT_NEAR(want_sum, static_cast<double>(exact), 2e-7 * static_cast<double>(exact) + 1e-300);
    for (CpuIsa isa : CpuIsaRunnable()) {
      std::vector<float> y(n);
      const double sum = KernelsFor(isa).exp_shift_sum_f32(x.data(), y.data(), n, m);
      EXPECT_EQ(sum, want_sum) << CpuIsaName(isa) << " n = " << n;
      EXPECT_EQ(y, want) << CpuIsaName(isa) << " n = " << n;
      EXPECT_EQ(KernelsFor(isa).exp_shift_sum_f32(x.data(), nullptr, n, m), want_sum);
    }
  }
}

// ExpectTermsAreVectorExp runs every level's exp_shift_sum_f32 on x with shift m and
// checks each term against VectorExp(x[k] - m) bit for bit.
void ExpectTermsAreVectorExp(const std::vector<float>& x, float m) {
  for (CpuIsa isa : CpuIsaRunnable()) {
    std::vector<float> y(x.size());
    KernelsFor(isa).exp_shift_sum_f32(x.data(), y.data(), static_cast<int64_t>(x.size()), m);
    for (size_t k = 0; k < x.size(); ++k) {
      const float want = VectorExp(x[k] - m);
      uint32_t got_bits, want_bits;
      std::memcpy(&got_bits, &y[k], 4);
      std::memcpy(&want_bits, &want, 4);
      ASSERT_EQ(got_bits, want_bits)
          << CpuIsaName(isa) << " x = " << x[k] << " m = " << m << ": " << y[k] << " vs " << want;
    }
  }
}

// Every term is VectorExp's scalar result bit for bit (the levels compute
// it a register of lanes at a time), at the edges too: NaN, +-inf, the
// clamps, results that underflow to subnormals, shifts up to 88 (the
// contract: m at least every x, so a shifted value is <= 0, but exact up
// to 88).
TEST(CpuIsa, ExpShiftSumTermsAreVectorExpBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {std::nanf(""), -inf, inf, -1000.0f, 1000.0f, -87.33654f, -87.3365f,
                          88.72283f, 88.7228f, -87.0f, 88.0f, -80.0f, 0.0f, -0.0f, 1e-30f,
                          -103.0f, 0.5f, -0.5f, 3.0f, -3.0f, 90.5f, 87.99f, -126.0f};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  for (int i = 0; i < 1000; ++i) x.push_back(u(rng));
  for (float m : {0.0f, 2.5f, 1000.0f, inf}) {
    std::vector<float> in_contract;
    for (float v : x) {
      if (!(v - m > 88.0f)) in_contract.push_back(v);
    }
    ExpectTermsAreVectorExp(in_contract, m);
  }
}

// The same over every 4099th float up to 88, of either sign (m = 0).
TEST(CpuIsa, ExpShiftSumTermsOverTheFloatsAreVectorExp) {
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    float v;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&v, &b, 4);
    if (!(v > 88.0f)) x.push_back(v);
  }
  ExpectTermsAreVectorExp(x, 0.0f);
}

template <typename T>
std::vector<T> RunLayerNorm(const CpuKernels& k, bool grad, const LayerNormArgs<T>& args,
                            int64_t rows) {
  std::vector<T> out(rows * args.d);
  LayerNormArgs<T> a = args;
  a.y = out.data();
  const auto run = [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>) {
      (grad ? k.layer_norm_grad_f32 : k.layer_norm_f32)(a, b, e);
    } else {
      (grad ? k.layer_norm_grad_f64 : k.layer_norm_f64)(a, b, e);
    }
  };
  run(0, 1);
  run(1, rows);
  return out;
}

template <typename T>
void CheckLayerNormLevels() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (int64_t d : {1, 7, 16, 33, 128, 515}) {
    const int64_t rows = 3;
    std::vector<T> x(rows * d), g(rows * d), gamma(d), beta(d);
    for (T& v : x) v = static_cast<T>(100 + u(rng));  // a large mean
    for (T& v : g) v = static_cast<T>(u(rng));
    for (T& v : gamma) v = static_cast<T>(u(rng));
    for (T& v : beta) v = static_cast<T>(u(rng));
    const LayerNormArgs<T> args = {d, 1e-5, x.data(), gamma.data(), beta.data(), g.data(),
                                   nullptr};
    for (bool grad : {false, true}) {
      const std::vector<T> want = RunLayerNorm(KernelsFor(CpuIsa::kBaseline), grad, args, rows);
      // The baseline's forward pass against a long double reference.
      for (int64_t r = 0; r < rows && !grad; ++r) {
        long double mean = 0, var = 0;
        for (int64_t i = 0; i < d; ++i) mean += x[r * d + i];
        mean /= d;
        for (int64_t i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
        const long double rstd = 1 / std::sqrt(var / d + 1e-5L);
        for (int64_t i = 0; i < d; ++i) {
          const long double y = (x[r * d + i] - mean) * rstd * gamma[i] + beta[i];
          // x - mean is rounded to a few ulps of x, then scaled by rstd.
          const long double cond = 1 + std::fabs(y) + std::fabs(x[r * d + i] * rstd * gamma[i]);
          ASSERT_NEAR(want[r * d + i], static_cast<double>(y),
                      static_cast<double>(4 * std::numeric_limits<T>::epsilon() * cond));
        }
      }
      for (CpuIsa isa : CpuIsaRunnable()) {
        EXPECT_EQ(RunLayerNorm(KernelsFor(isa), grad, args, rows), want)
            << CpuIsaName(isa) << (grad ? " grad" : " forward") << " d = " << d;
      }
    }
  }
}

TEST(CpuIsa, LayerNormFloatOfEveryLevelIsBitIdenticalToTheBaseline) {
  CheckLayerNormLevels<float>();
}
TEST(CpuIsa, LayerNormDoubleOfEveryLevelIsBitIdenticalToTheBaseline) {
  CheckLayerNormLevels<double>();
}

// layer_norm_param_grad's column sums: rows [0, 1) then [1, rows) into an
// accumulator that starts at `acc0`, the way the op adds a block's rows.
template <typename T>
std::vector<double> RunParamGrad(const CpuKernels& k, const LayerNormArgs<T>& args, int64_t rows,
                                 double acc0) {
  std::vector<double> acc(2 * args.d, acc0);
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 1}, {1, rows}}) {
    if constexpr (std::is_same_v<T, float>) {
      k.layer_norm_param_grad_f32(args, b, e, acc.data());
    } else {
      k.layer_norm_param_grad_f64(args, b, e, acc.data());
    }
  }
  return acc;
}

template <typename T>
void CheckParamGradLevels() {
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (int64_t d : {1, 7, 16, 33, 128, 515}) {
    const int64_t rows = 5;
    std::vector<T> x(rows * d), g(rows * d);
    for (T& v : x) v = static_cast<T>(100 + u(rng));  // a large mean
    for (T& v : g) v = static_cast<T>(u(rng));
    const LayerNormArgs<T> args = {d, 1e-5, x.data(), nullptr, nullptr, g.data(), nullptr};
    const std::vector<double> want = RunParamGrad(KernelsFor(CpuIsa::kBaseline), args, rows, 0.5);
    // The baseline against long double: xhat is good to a few ulps of x
    // times rstd, each product and sum rounds once in double.
    for (int64_t i = 0; i < d; ++i) {
      long double dgamma = 0.5L, dbeta = 0.5L, scale = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = x.data() + r * d;
        long double mean = 0, var = 0;
        for (int64_t j = 0; j < d; ++j) mean += row[j];
        mean /= d;
        for (int64_t j = 0; j < d; ++j) var += (row[j] - mean) * (row[j] - mean);
        const long double rstd = 1 / std::sqrt(var / d + 1e-5L);
        dgamma += g[r * d + i] * (row[i] - mean) * rstd;
        dbeta += g[r * d + i];
        scale += std::fabs(g[r * d + i] * row[i] * rstd);
      }
      const double bound = static_cast<double>(8 * std::numeric_limits<double>::epsilon() *
                                               (1 + scale));
      ASSERT_NEAR(want[i], static_cast<double>(dgamma), bound) << "dgamma d = " << d;
      ASSERT_NEAR(want[d + i], static_cast<double>(dbeta), 1e-14) << "dbeta d = " << d;
    }
    for (CpuIsa isa : CpuIsaRunnable()) {
      EXPECT_EQ(RunParamGrad(KernelsFor(isa), args, rows, 0.5), want)
          << CpuIsaName(isa) << " d = " << d;
    }
  }
}

TEST(CpuIsa, LayerNormParamGradFloatOfEveryLevelIsBitIdenticalToTheBaseline) {
  CheckParamGradLevels<float>();
}
TEST(CpuIsa, LayerNormParamGradDoubleOfEveryLevelIsBitIdenticalToTheBaseline) {
  CheckParamGradLevels<double>();
}

// ---- Sums in double: column sums, softmax's backward rows --------------------

TEST(CpuIsa, SumColumnsOfEveryLevelIsBitIdenticalToTheBaseline) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1e3f, 1e3f);
  for (int64_t rows : {0, 1, 3, 4, 5, 2048}) {
    for (int64_t len : {1, 7, 16, 37, 384}) {
      const int64_t stride = len + 3;  // a tile of wider rows, as ReduceColumns reads
      std::vector<float> in(rows * stride);
      for (float& v : in) v = u(rng);
      std::vector<double> want(len, 0.5);
      KernelsFor(CpuIsa::kBaseline).sum_columns_f32(in.data(), rows, stride, len, want.data());
      // The baseline against a long double sum: float terms add exactly in
      // double, so the error is a few roundings of the running sum.
      for (int64_t j = 0; j < len; ++j) {
        long double exact = 0.5L;
        for (int64_t r = 0; r < rows; ++r) exact += in[r * stride + j];
        ASSERT_NEAR(want[j], static_cast<double>(exact), 1e-12 * (1 + rows * 1e3)) << j;
      }
      for (CpuIsa isa : CpuIsaRunnable()) {
        std::vector<double> got(len, 0.5);
        KernelsFor(isa).sum_columns_f32(in.data(), rows, stride, len, got.data());
        EXPECT_EQ(got, want) << CpuIsaName(isa) << " rows = " << rows << " len = " << len;
      }
    }
  }
}

TEST(CpuIsa, SoftmaxGradOfEveryLevelIsBitIdenticalToTheBaseline) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int64_t n : {1, 15, 16, 17, 32, 257}) {
    const int64_t rows = 3;
    std::vector<float> g(rows * n), y(rows * n);
    for (float& v : g) v = u(rng);
    for (float& v : y) v = std::fabs(u(rng)) / n;
    std::vector<float> want(rows * n);
    KernelsFor(CpuIsa::kBaseline).softmax_grad_f32(g.data(), y.data(), want.data(), rows, n);
    for (int64_t r = 0; r < rows; ++r) {  // the baseline against long double
      long double dot = 0;
      for (int64_t k = 0; k < n; ++k) dot += static_cast<long double>(g[r * n + k]) * y[r * n + k];
      for (int64_t k = 0; k < n; ++k) {
        const long double d = y[r * n + k] * (g[r * n + k] - dot);
        // dot and g - dot are each rounded to float, then the product.
        const long double bound = 2 * std::numeric_limits<float>::epsilon() *
                                  (y[r * n + k] * (std::fabs(g[r * n + k]) + std::fabs(dot)) +
                                   std::fabs(d));
        ASSERT_NEAR(want[r * n + k], static_cast<double>(d), static_cast<double>(bound)) << k;
      }
    }
    for (CpuIsa isa : CpuIsaRunnable()) {
      std::vector<float> got = g;  // in place: dx may be g
      KernelsFor(isa).softmax_grad_f32(got.data(), y.data(), got.data(), rows, n);
      EXPECT_EQ(got, want) << CpuIsaName(isa) << " n = " << n;
    }
  }
}

}  // namespace
}  // namespace dagrad::testing
