// Cross-check cases at the edges of the numbers and of the launch grids,
// where a CUDA kernel can disagree with the CPU although every ordinary
// case agrees: NaN at any position of a max or maximum, relu and pow at NaN
// and -0, integer sums that
// wrap around, dropped negative and non-finite dropout inputs (-0.0, NaN),
// float32 sums over tens of millions of elements (accumulated in double
// on both backends), and a column reduction over more rows than one grid
// dimension can hold in 128-row chunks (128 * 65535 = 8,388,480).

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/case_table.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// WithNaNs returns `t` (float32 or float64) with NaN at the flat positions.
Tensor WithNaNs(Tensor t, std::initializer_list<int64_t> positions) {
  for (int64_t i : positions) {
    if (t.dtype() == DType::kFloat32) {
      t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
    } else {
      t.data<double>()[i] = std::numeric_limits<double>::quiet_NaN();
    }
  }
  return t;
}

// FloatsOf returns `values` as a float tensor of dtype d.
Tensor FloatsOf(DType d, const Shape& shape, const std::vector<double>& values) {
  if (d == DType::kFloat64) return T<double>(shape, values);
  return T<float>(shape, std::vector<float>(values.begin(), values.end()));
}

// Max over every reduction path, and maximum/minimum with NaN in either
// operand, broadcast or not: NaN wherever an input is NaN (torch.amax,
// torch.maximum).
void NanCases(Cases& cs) {
  cs.Floats("max_nan_at_any_position", [](CaseBuilder& b, DType d) {
    // Rows of 37: NaN first in row 0, in the middle of row 1, last in row 2.
    const Value x = b.Fixed("x", WithNaNs(Random(d, {4, 37}, 11, -5, 5), {0, 37 + 18, 74 + 36}));
    b.Out(Max(x, {-1}));  // rows
    b.Out(Max(x, {0}));   // columns
    b.Out(Max(x));        // everything
    const Value y = b.Fixed("y", WithNaNs(Random(d, {3, 5, 7}, 12, -5, 5), {1, 40, 104}));
    b.Out(Max(y, {0, 2}));  // not contiguous: the odometer
    // Long rows cut into chunks: NaN in the last chunk of row 0, mid row 1.
    const Value z = b.Fixed("z", WithNaNs(Random(d, {2, 40000}, 13, -5, 5), {39999, 60000}));
    b.Out(Max(z, {-1}));
    b.Out(Max(z));
    // Columns cut into slices of mid: NaN in a late slice only.
    const Value w = b.Fixed("w", WithNaNs(Random(d, {3000, 4}, 14, -5, 5), {2900 * 4 + 1}));
    b.Out(Max(w, {0}));
  }, {.gradients = false});
  cs.Floats("maximum_minimum_nan", [](CaseBuilder& b, DType d) {
    // NaN in a alone, in c alone, and in both at (0, 0).
    const Value a = b.Fixed("a", WithNaNs(Random(d, {3, 40}, 15, -2, 2), {0, 41, 119}));
    const Value c = b.Fixed("c", WithNaNs(Random(d, {40}, 16, -2, 2), {0, 7, 39}));
    const Value e = b.Fixed("e", WithNaNs(Random(d, {3, 40}, 17, -2, 2), {5, 41, 100}));
    for (const auto& [p, q] : {std::pair{a, c}, std::pair{c, a}, std::pair{a, e}}) {
      b.Out(Maximum(p, q));
      b.Out(Minimum(p, q));
    }
  }, {.gradients = false});
  // relu(NaN) = NaN and its gradient passes at NaN (torch.relu,
  // threshold_backward); pow(-0, 0.5) = -0 and pow(-0, -0.5) = -inf (torch
  // computes these exponents by sqrt). The CUDA functors once gave relu(NaN)
  // = 0 and pow(-0, 0.5) = +0; they are the CPU's own now.
  cs.Floats("relu_pow_edges", [](CaseBuilder& b, DType d) {
    const Value x = b.Fixed("x", WithNaNs(FloatsOf(d, {6}, {-0.0, 0.0, -1.0, 2.0, 0.0, 4.0}), {4}));
    b.Out(Relu(x));
    b.Out(ReluGrad(x, OnesLike(x)));
    b.Out(Pow(x, 0.5));
    b.Out(Pow(x, -0.5));
    b.Out(Pow(x, 3.0));
  }, {.gradients = false});
}

// Integer sums wrap around (two's complement), on the CPU through WrapAdd
// and on CUDA through the same function in every tree and pass; int32
// sums are taken in int64 and wrap on the way back to int32.
void WrapCases(Cases& cs) {
  cs.Add("sum_wraps_around", [](CaseBuilder& b) {
    std::vector<int32_t> i32(600);
    std::vector<int64_t> i64(600), long_rows(80000);
    for (int i = 0; i < 600; ++i) {
      i32[i] = std::numeric_limits<int32_t>::max() - 3 * i;
      i64[i] = std::numeric_limits<int64_t>::max() - 7 * i;
    }
    for (int i = 0; i < 80000; ++i) long_rows[i] = std::numeric_limits<int64_t>::max() - i;
    for (const Value x : {b.Fixed("i32", T<int32_t>({300, 2}, i32)),
                          b.Fixed("i64", T<int64_t>({300, 2}, i64))}) {
      b.Out(Sum(x));        // one row: thread partials, then a block tree
      b.Out(Sum(x, {0}));   // columns, slices of mid
      b.Out(Sum(x, {-1}));  // rows of two
      b.Out(Sum(Reshape(x, {10, 30, 2}), {0, 2}));  // the odometer
    }
    const Value l = b.Fixed("long_rows", T<int64_t>({2, 40000}, long_rows));
    b.Out(Sum(l, {-1}));  // chunks of a row, then their partials
    b.Out(Sum(l));
  }).gradients = false;
}

// Dropout of negative, signed-zero, NaN and infinite inputs, bit for bit:
// a dropped element is x * 0 on both (ops/dropout_math.h).
void DropoutCases(Cases& cs) {
  cs.Floats("dropout_signs_and_nans", [](CaseBuilder& b, DType d) {
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> kinds = {-1.5, 2.0, NAN, inf, -inf, -0.0, 0.0};
    std::vector<double> v(1001);
    for (size_t i = 0; i < v.size(); ++i) v[i] = kinds[i % kinds.size()];
    const Value x = b.Fixed("x", FloatsOf(d, {1001}, v));
    b.Out(Dropout(x, 0.3));
    b.Out(Dropout(Neg(x), 0.5));
  }, {.training = true, .exact = true});
}

// float32 sums of tens of millions of values near 1, over each axis
// position and path: a float32 accumulator stalls at 2^24 = 16777216 (and
// is off by hundreds well before), so only double accumulation, on both
// backends, agrees to the default 1e-5.
void LargeReduceCases(Cases& cs) {
  cs.Add("sum_large_f32_every_axis", [](CaseBuilder& b) {
    const Value x = b.Input("x", DType::kFloat32, {4100, 4100}, 0.5, 1.5);
    b.Out(Sum(x));             // 16.8 M values: one row in chunks
    b.Out(Sum(x, {0}));        // columns
    b.Out(Sum(x, {1}));        // rows
    b.Out(Mean(x, {0}));
    const Value y = b.Input("y", DType::kFloat32, {300, 300, 200}, 0.5, 1.5);
    b.Out(Sum(y, {0, 2}));     // the odometer, 60000 values per output
    b.Out(Sum(y, {1}));        // a middle axis
  }).gradients = false;
  // More than 128 * 65535 reduced rows: the column kernel once returned
  // Unimplemented here (a bias gradient over a large B * T).
  cs.Each("reduce_columns_past_grid_limit", {DType::kFloat32, DType::kInt32},
          [](CaseBuilder& b, DType d) {
            const bool f = d == DType::kFloat32;
            const Value x = b.Input("x", d, {9000000, 3}, f ? 0.5 : -20, f ? 1.5 : 20);
            b.Out(Sum(x, {0}));
            b.Out(Max(x, {0}));
            if (f) b.Out(Mean(x, {0}));
            const Value m = b.Input("m", d, {2, 4500000, 2}, f ? 0.5 : -20, f ? 1.5 : 20);
            b.Out(Sum(m, {1}));
          },
          {.gradients = false});
}

}  // namespace

void EdgeCases(Cases& cs) {
  NanCases(cs);
  WrapCases(cs);
  DropoutCases(cs);
  LargeReduceCases(cs);
}

}  // namespace dagrad::testing
