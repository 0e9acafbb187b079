// GemmBFloat16's native kernel (vdpbf16ps, ops/cpu/kernels/gemm_bf16_kernel.cc)
// and its widened fallback, each against a float64 product of the same
// bfloat16 values, against each other, and across thread counts; the
// kernel's dispatch and `dagrad info`'s line on it. The native cases skip
// where the CPU lacks AVX512_BF16.

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/bfloat16.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// The native kernel, or null where this CPU or build cannot run it.
GemmBf16Fn NativeKernel() {
  if (!CpuHasAvx512Bf16()) return nullptr;
  return Bf16ProductsFor(CpuIsa::kAvx512, "cpu features").gemm;
}

#define SKIP_WITHOUT_BF16_KERNEL()                                           \
  if (NativeKernel() == nullptr) {                                           \
    GTEST_SKIP() << "this CPU lacks AVX512_BF16 (or the build its kernel): " \
                 << Bf16ProductsFor(CpuIsaRunnable().back(), "cpu features") \
                        .description;                                        \
  }

std::vector<BFloat16> RandomBf16(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<BFloat16> v(n);
  for (BFloat16& x : v) x = FloatToBFloat16(u(rng));
  return v;
}

// Bf16Layout: the strides of A (m x k), B (k x n) and C (m x n) in buffers of
// their own; a_t / b_t store A / B by columns, c_t stores C by columns, and
// rows of C are padded by 3 otherwise; `spread` puts A's and B's elements
// every other place (no stride of 1, as in a strided view).
struct Bf16Layout {
  bool a_t, b_t, c_t, spread = false;
};

struct Bf16Product {
  int64_t m, n, k;
  float alpha, beta;
  Bf16Layout layout;
  int64_t s() const { return layout.spread ? 2 : 1; }
  int64_t rsa() const { return s() * (layout.a_t ? 1 : k); }
  int64_t csa() const { return s() * (layout.a_t ? m : 1); }
  int64_t rsb() const { return s() * (layout.b_t ? 1 : n); }
  int64_t csb() const { return s() * (layout.b_t ? k : 1); }
  int64_t rsc() const { return layout.c_t ? 1 : n + 3; }
  int64_t csc() const { return layout.c_t ? m : 1; }
  int64_t c_size() const { return layout.c_t ? m * n : m * (n + 3); }
};

struct Operands {
  std::vector<BFloat16> a, b;
  std::vector<float> c0;
};

Operands MakeOperands(const Bf16Product& p, uint32_t seed) {
  Operands o{RandomBf16(p.s() * p.m * p.k, seed),
             RandomBf16(p.s() * p.k * p.n, seed + 1),
             {}};
  for (BFloat16 x : RandomBf16(p.c_size(), seed + 2))
    o.c0.push_back(BFloat16ToFloat(x));
  return o;
}

std::vector<float> Multiply(GemmBf16Fn gemm, const Bf16Product& p,
                            const Operands& o, bool one_thread = false) {
  std::vector<float> c = o.c0;
  const absl::Status st = GemmBFloat16On(
      gemm, p.m, p.n, p.k, p.alpha, o.a.data(), p.rsa(), p.csa(), o.b.data(),
      p.rsb(), p.csb(), p.beta, c.data(), p.rsc(), p.csc(), one_thread);
  EXPECT_TRUE(st.ok()) << st;
  return c;
}

// Reference: for each element of C (at its offset in C's buffer), the
// float64 product of the bfloat16 values, and the summation-order bound
// 2 (k + 2) eps (|alpha| |A|·|B| + |beta C0|), eps = 2^-24, around it.
struct Reference {
  std::vector<int64_t> at;
  std::vector<double> want, bound;
};

Reference ReferenceOf(const Bf16Product& p, const Operands& o) {
  const double eps = std::ldexp(1.0, -24);
  Reference r;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0, size = 0;
      for (int64_t l = 0; l < p.k; ++l) {
        const double x =
            double{BFloat16ToFloat(o.a[i * p.rsa() + l * p.csa()])} *
            BFloat16ToFloat(o.b[l * p.rsb() + j * p.csb()]);
        sum += x;
        size += std::abs(x);
      }
      const int64_t at = i * p.rsc() + j * p.csc();
      const double c0 = p.beta == 0 ? 0.0 : double{p.beta} * o.c0[at];
      r.at.push_back(at);
      r.want.push_back(p.alpha * sum + c0);
      r.bound.push_back(2 * (p.k + 2) * eps *
                        (std::abs(p.alpha) * size + std::abs(c0)));
    }
  }
  return r;
}

// ExpectNearReference checks every element of C against ReferenceOf, and
// that C's padding is untouched.
void ExpectNearReference(const Bf16Product& p, const Operands& o,
                         const std::vector<float>& c) {
  const Reference r = ReferenceOf(p, o);
  int failures = 0;
  for (size_t e = 0; e < r.at.size(); ++e) {
    if (!(std::abs(c[r.at[e]] - r.want[e]) <= r.bound[e]) && ++failures <= 3) {
      ADD_FAILURE() << "C[" << r.at[e] << "] of " << p.m << "x" << p.n << "x"
                    << p.k << ": " << c[r.at[e]] << ", want " << r.want[e]
                    << " +- " << r.bound[e];
    }
  }
  for (int64_t i = 0; !p.layout.c_t && i < p.m; ++i) {
    for (int64_t j = p.n; j < p.n + 3; ++j) {
      EXPECT_EQ(c[i * p.rsc() + j], o.c0[i * p.rsc() + j])
          << "padding of row " << i;
    }
  }
}

constexpr Bf16Layout kBf16Layouts[] = {
    {false, false, false},       {true, false, false},
    {false, true, false},        {true, true, true},
    {false, false, false, true}, {true, true, false, true}};

TEST(GemmBf16, NativeMatchesFloat64ReferenceOnManyShapes) {
  SKIP_WITHOUT_BF16_KERNEL();
  uint32_t seed = 1;
  for (int64_t m : {1, 5, 6, 7, 13, 100}) {
    for (int64_t n : {1, 15, 16, 17, 64, 65, 130}) {
      for (int64_t k : {1, 2, 3, 17, 64, 301}) {
        for (const Bf16Layout& layout : kBf16Layouts) {
          const Bf16Product p{m, n, k, 1.0f, 0.0f, layout};
          const Operands o = MakeOperands(p, seed += 3);
          ExpectNearReference(p, o, Multiply(NativeKernel(), p, o));
        }
      }
    }
  }
}

TEST(GemmBf16, AlphaAndBetaOnBothPaths) {
  SKIP_WITHOUT_BF16_KERNEL();
  for (GemmBf16Fn gemm : {NativeKernel(), GemmBf16Fn{nullptr}}) {
    for (const auto& [alpha, beta] :
         {std::pair{0.5f, 1.0f}, {-2.0f, 0.25f}, {1.0f, -1.0f}}) {
      for (const Bf16Layout& layout : kBf16Layouts) {
        const Bf16Product p{37, 70, 129, alpha, beta, layout};
        const Operands o = MakeOperands(p, 7);
        ExpectNearReference(p, o, Multiply(gemm, p, o));
      }
    }
  }
}

// The widened product (BLIS's sgemm) is the fallback at lower levels: the
// two agree within both their bounds, on shapes BLIS takes itself too.
TEST(GemmBf16, NativeAgreesWithWidenedSgemm) {
  SKIP_WITHOUT_BF16_KERNEL();
  for (const Bf16Product& p : {Bf16Product{256, 384, 128, 1, 0, kBf16Layouts[0]},
                           Bf16Product{128, 512, 255, 1, 0, kBf16Layouts[1]},
                           Bf16Product{300, 64, 512, 1, 0, kBf16Layouts[2]}}) {
    const Operands o = MakeOperands(p, 11);
    const std::vector<float> native = Multiply(NativeKernel(), p, o);
    const std::vector<float> wide = Multiply(nullptr, p, o);
    ExpectNearReference(p, o, native);
    ExpectNearReference(p, o, wide);
    const Reference r = ReferenceOf(p, o);
    int64_t apart = 0;
    for (size_t e = 0; e < r.at.size(); ++e) {
      apart += !(std::abs(native[r.at[e]] - wide[r.at[e]]) <= 2 * r.bound[e]);
    }
    EXPECT_EQ(apart, 0) << p.m << "x" << p.n << "x" << p.k;
  }
}

TEST(GemmBf16, BetaZeroReadsNoC) {
  SKIP_WITHOUT_BF16_KERNEL();
  for (GemmBf16Fn gemm : {NativeKernel(), GemmBf16Fn{nullptr}}) {
    for (const Bf16Layout& layout : {kBf16Layouts[0], kBf16Layouts[3]}) {
      const Bf16Product p{9, 33, 5, 1.0f, 0.0f, layout};
      Operands o = MakeOperands(p, 3);
      o.c0.assign(p.c_size(), std::numeric_limits<float>::quiet_NaN());
      const std::vector<float> c = Multiply(gemm, p, o);
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j)
          EXPECT_FALSE(std::isnan(c[i * p.rsc() + j * p.csc()]));
      }
    }
  }
}

// An odd k's zero partner must not turn an infinite last element into NaN
// (inf * 0); k = 0 leaves beta * C.
TEST(GemmBf16, OddKPadsWithZerosAndEmptyKScalesC) {
  SKIP_WITHOUT_BF16_KERNEL();
  const Bf16Product p{2, 3, 3, 1.0f, 0.0f, kBf16Layouts[0]};
  Operands o = MakeOperands(p, 5);
  o.a.assign(6, FloatToBFloat16(1.0f));
  o.a[2] = FloatToBFloat16(std::numeric_limits<float>::infinity());
  o.b.assign(9, FloatToBFloat16(0.5f));
  const std::vector<float> c = Multiply(NativeKernel(), p, o);
  EXPECT_EQ(c[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(c[p.rsc()], 1.5f);  // 1 * 0.5 three times
  const Bf16Product empty{2, 3, 0, 1.0f, 0.5f, kBf16Layouts[0]};
  const Operands e = MakeOperands(empty, 5);
  const std::vector<float> scaled = Multiply(NativeKernel(), empty, e);
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(scaled[j], 0.5f * e.c0[j]);
}

// vdpbf16ps counts subnormal inputs and results as zero (the documented
// difference from the widened product, which keeps them): 2^-127 * 2^10
// has a subnormal input, 2^-70 * 2^-60 a subnormal product.
TEST(GemmBf16, SubnormalsCountAsZeroOnTheNativePathOnly) {
  SKIP_WITHOUT_BF16_KERNEL();
  const Bf16Product p{1, 2, 1, 1.0f, 0.0f, kBf16Layouts[0]};
  Operands o = MakeOperands(p, 9);
  o.a = {FloatToBFloat16(0x1p-127f)};
  o.b = {FloatToBFloat16(0x1p10f), FloatToBFloat16(0x1p-3f)};
  EXPECT_EQ(Multiply(nullptr, p, o)[0], 0x1p-117f);
  EXPECT_EQ(Multiply(NativeKernel(), p, o)[0], 0.0f);
  o.a = {FloatToBFloat16(0x1p-70f)};
  o.b = {FloatToBFloat16(0x1p-60f), FloatToBFloat16(0x1p-3f)};
  EXPECT_EQ(Multiply(nullptr, p, o)[0], 0x1p-130f);
  EXPECT_EQ(Multiply(NativeKernel(), p, o)[0], 0.0f);
  EXPECT_EQ(Multiply(NativeKernel(), p, o)[1], 0x1p-73f);
}

// Each element is summed whole by one thread in a fixed order: one thread,
// two, and one_thread give the same bits, split by rows (tall C) or by
// columns (one row).
TEST(GemmBf16, SameBitsOnAnyThreadCount) {
  SKIP_WITHOUT_BF16_KERNEL();
  const int threads = NumThreads();
  for (const Bf16Product& p : {Bf16Product{301, 200, 257, 1, 0, kBf16Layouts[0]},
                           Bf16Product{1, 2000, 301, 1, 0, kBf16Layouts[2]}}) {
    const Operands o = MakeOperands(p, 13);
    ASSERT_OK(SetNumThreads(1));
    const std::vector<float> one = Multiply(NativeKernel(), p, o);
    ASSERT_OK(SetNumThreads(2));
    const std::vector<float> two = Multiply(NativeKernel(), p, o);
    const std::vector<float> inline_one =
        Multiply(NativeKernel(), p, o, /*one_thread=*/true);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)),
              0)
        << p.m;
    EXPECT_EQ(
        std::memcmp(one.data(), inline_one.data(), one.size() * sizeof(float)),
        0)
        << p.m;
    ExpectNearReference(p, o, one);
  }
  ASSERT_OK(SetNumThreads(threads));
}

// GemmBFloat16 runs ActiveBf16Products's choice: a subnormal input tells
// the two apart (ctest gemm_bf16_baseline runs this at the baseline level).
TEST(GemmBf16, GemmBFloat16RunsTheActiveChoice) {
  ASSERT_OK_AND_ASSIGN(const Bf16Products active, ActiveBf16Products());
  const BFloat16 a = FloatToBFloat16(0x1p-127f), b = FloatToBFloat16(0x1p10f);
  float c = 1.0f;
  ASSERT_OK(GemmBFloat16(1, 1, 1, 1.0f, &a, 1, 1, &b, 1, 1, 0.0f, &c, 1, 1));
  EXPECT_EQ(c, active.gemm != nullptr ? 0.0f : 0x1p-117f) << active.description;
}

TEST(GemmBf16, LowerLevelsWiden) {
  for (CpuIsa isa : CpuIsaRunnable()) {
    const Bf16Products p = Bf16ProductsFor(isa, "DAGRAD_CPU_ISA");
    if (isa != CpuIsa::kAvx512) {
      EXPECT_EQ(p.gemm, nullptr) << CpuIsaName(isa);
      EXPECT_THAT(p.description, ::testing::HasSubstr(
                                     "widen to float32 + sgemm (kernel level"));
    }
    EXPECT_EQ(p.gemm != nullptr,
              isa == CpuIsa::kAvx512 && NativeKernel() != nullptr);
  }
}

TEST(GemmBf16, InfoSaysWhichKernelRunsAndWhy) {
  SKIP_WITHOUT_BF16_KERNEL();
  const CliResult native = RunDagrad("info", "env -u DAGRAD_CPU_ISA");
  ASSERT_EQ(native.code, 0) << native.err;
  EXPECT_THAT(native.out,
              ::testing::HasSubstr("\nbf16 products: vdpbf16ps (AVX512_BF16"));
  const CliResult lowered = RunDagrad("info", "env DAGRAD_CPU_ISA=avx2");
  ASSERT_EQ(lowered.code, 0) << lowered.err;
  EXPECT_THAT(
      lowered.out,
      ::testing::HasSubstr(
          "\nbf16 products: widen to float32 + sgemm (kernel level avx2, "
          "set lower by DAGRAD_CPU_ISA; the CPU has AVX512_BF16)\n"));
}

}  // namespace
}  // namespace dagrad::testing
