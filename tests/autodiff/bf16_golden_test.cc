// The 16-bit floats against PyTorch (tools/goldens/bf16.py): casts from
// float32 bit for bit (NaN as NaN: torch makes every NaN one pattern,
// dagrad keeps the sign), products within float32's error bound or one
// bfloat16 ulp, an autocast linear step within bfloat16's precision.

#include <cmath>
#include <vector>

#include "engine/bfloat16.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

void ExpectSameValues(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.TypeString(), want.TypeString()) << what;
  const std::vector<double> g = AsDoubles(got), w = AsDoubles(want);
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " element " << i;
    } else {
      // Bits, so that -0 and +0 differ.
      EXPECT_TRUE(g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i]))
          << what << " element " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
}

class BFloat16Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(BFloat16Golden, CastsFromFloat32AsTorchDoes) {
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden("bf16", GetParam()));
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, c.inputs.at("x").shape());
  const Value bf = Cast(x, DType::kBFloat16), half = Cast(x, DType::kFloat16);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, {bf, half, Cast(bf, DType::kFloat32)}, {{x, c.inputs.at("x")}}));
  ExpectSameValues(out[0], c.outputs.at("bfloat16"), "bfloat16");
  ExpectSameValues(out[1], c.outputs.at("float16"), "float16");
  ASSERT_OK_AND_ASSIGN(Tensor widened, ConvertFloats(c.outputs.at("bfloat16"), DType::kFloat32));
  ExpectSameValues(out[2], widened, "bfloat16 -> float32");
}

INSTANTIATE_TEST_SUITE_P(Casts, BFloat16Golden, ::testing::Values("cast_edges", "cast_random"));

// dagrad's bfloat16 product is the float32 one rounded once: at most an
// ulp from torch's float32 product rounded (the two float32 sums may round
// either way at a midpoint). torch 1.13's own CPU bfloat16 product (Debian's
// build, no MKL) accumulates in bfloat16, so it is an oracle only to its
// error bound, k x 2^-8 x sum |a||b|.
TEST(BFloat16Goldens, MatMulIsTheFloat32ProductOfTheBFloat16Values) {
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden("bf16", "matmul"));
  const Tensor& ta = c.inputs.at("a");
  const Tensor& tb = c.inputs.at("b");
  Graph g;
  const Value a = g.Input("a", DType::kBFloat16, ta.shape());
  const Value b = g.Input("b", DType::kBFloat16, tb.shape());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, {MatMul(a, b), MatMul(a, b, {.output = DType::kBFloat16})},
                               {{a, ta}, {b, tb}}));
  // 24 products of |values| < ~4: float32's bound is far below 1e-6.
  EXPECT_LT(MaxRelativeError(out[0], c.outputs.at("float32")), 1e-6);
  ASSERT_EQ(out[1].TypeString(), c.outputs.at("bfloat16").TypeString());
  const int64_t k = tb.shape()[0], n = tb.shape()[1];
  const std::vector<double> va = AsDoubles(ta), vb = AsDoubles(tb), got = AsDoubles(out[1]);
  const std::vector<double> f32 = AsDoubles(c.outputs.at("float32"));
  const std::vector<double> torch16 = AsDoubles(c.outputs.at("bfloat16"));
  for (size_t i = 0; i < got.size(); ++i) {
    const double rounded = BFloat16ToFloat(DoubleToBFloat16(f32[i]));
    EXPECT_LE(std::abs(got[i] - rounded), std::ldexp(std::abs(rounded), -7)) << i;
    double magnitude = 0;  // sum |a||b| of element i
    for (int64_t p = 0; p < k; ++p) {
      magnitude += std::abs(va[i / n * k + p] * vb[p * n + i % n]);
    }
    EXPECT_LE(std::abs(torch16[i] - got[i]), k * std::ldexp(magnitude, -8)) << i;
  }
}

// torch's autocast rounds y, the bias and the backward products' results to
// bfloat16; dagrad keeps them float32. Both start from the same bfloat16
// operands, so they agree to bfloat16's precision: 2^-7 of the largest.
TEST(BFloat16Goldens, AnAutocastLinearStepAgreesToBFloat16Precision) {
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden("bf16", "autocast_linear"));
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, c.inputs.at("x").shape());
  const Value w = g.Input("w", DType::kFloat32, c.inputs.at("w").shape());
  const Value bias = g.Input("bias", DType::kFloat32, c.inputs.at("bias").shape());
  const Value r = g.Input("r", DType::kFloat32, c.inputs.at("r").shape());
  const Value y = Linear(Cast(x, DType::kBFloat16), Cast(w, DType::kBFloat16), bias);
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(Sum(Mul(y, r)), {x, w, bias}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, {y, grads[0], grads[1], grads[2]},
                               {{x, c.inputs.at("x")},
                                {w, c.inputs.at("w")},
                                {bias, c.inputs.at("bias")},
                                {r, c.inputs.at("r")}}));
  const char* names[] = {"y", "grad_x", "grad_w", "grad_bias"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_LT(MaxRelativeError(out[i], c.outputs.at(names[i])), 1.0 / 128) << names[i];
  }
  EXPECT_EQ(out[0].dtype(), DType::kFloat32);
}

}  // namespace
}  // namespace dagrad::testing
