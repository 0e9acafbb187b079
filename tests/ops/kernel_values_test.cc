// The values the examples of the CPU kernels' and the ops' math headers
// promise in their comments (ops/cpu/, ops/math/, ops/fill.h's FillValue):
// the examples themselves run as HeaderExample.ops_*, extracted from the
// headers; these check what they compute.
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/attrs.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/math/sampling_math.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

TEST(KernelValues, ParallelForRunsEachRowOnce) {
  std::vector<int> done(200, 0);
  ParallelFor(200, RowGrain(128), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) ++done[r];
  });
  EXPECT_EQ(done, std::vector<int>(200, 1));
  EXPECT_EQ(RowGrain(128), 128);
  EXPECT_EQ(RowGrain(0), 16384);
  EXPECT_EQ(RowGrain(100000), 1);
}

TEST(KernelValues, RowsAndLanes) {
  const float x[] = {0, 1, 2};
  const float m = RowMax(x, 3);
  EXPECT_EQ(m, 2);
  EXPECT_EQ(VectorExp(x[2] - m), 1);
  EXPECT_EQ(SumLanes(3, [&](int64_t i) { return static_cast<double>(x[i]); }), 3);
  const float row[] = {1, 5, 2, 7, 0, 7};
  ASSERT_OK_AND_ASSIGN(const AxisRows r, AxisRowsOf(Shape({2, 3}), 1));
  EXPECT_EQ(ArgMaxRow(row + r.n * r.inner, r.n, r.inner), 0);  // 7, 0, 7: the first maximum
  const TanhFn tanh_fn{Attrs()};
  EXPECT_FLOAT_EQ(tanh_fn(1.0f), std::tanh(1.0f));
}

TEST(KernelValues, BroadcastLoopAddsARowToEach) {
  const Shape out_shape({2, 3}), a_shape({2, 3}), b_shape({3});
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
  float y[6];
  BroadcastLoop<2>(out_shape, {&a_shape, &b_shape})
      .Run([&](int64_t out, const int64_t* in, const int64_t* step, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          y[out + i] = a[in[0] + i * step[0]] + b[in[1] + i * step[1]];
        }
      });
  EXPECT_EQ(y[3], 14);
}

TEST(KernelValues, SmallProducts) {
  ASSERT_OK_AND_ASSIGN(const CpuKernels* kernels, ActiveKernels());
  const float a[] = {1, 2}, b[] = {3, 4};
  float c[1] = {0};
  alignas(64) float panel[32];
  kernels->small_gemm_f32({.m = 1, .n = 1, .k = 2, .alpha = 1, .a = a, .rsa = 2, .csa = 1,
                           .b = b, .rsb = 1, .csb = 1, .beta = 0, .c = c, .ldc = 1,
                           .panel = panel});
  EXPECT_EQ(c[0], 11);
  const float m4[] = {1, 2, 3, 4}, eye[] = {1, 0, 0, 1};
  float out[4] = {};
  ASSERT_TRUE(IsSmallGemm(*kernels, 2, 2, 2));
  SmallGemm<float>(*kernels, 2, 2, 2, 1, m4, 2, 1, eye, 2, 1, 0, out, 2);
  EXPECT_EQ(out[3], 4);
}

TEST(KernelValues, CpuInfoNamesBlisKernels) {
  ASSERT_OK(ConfigureCpu());
  EXPECT_FALSE(GetCpuInfo().blis_arch.empty());
}

TEST(KernelValues, FillValuesKeepIntegers) {
  FillValue big = (int64_t{1} << 53) + 1;
  FillValue half = 0.5;
  EXPECT_EQ(big.integer(), 9007199254740993);
  EXPECT_FALSE(half.is_integer());
}

}  // namespace
}  // namespace dagrad
