// The op cases (tests/autodiff/support/op_case.h) of the reductions, ops/reduce.cc:
// sum, mean and max through each of their kernels' paths, at the edges of
// the numbers (NaN, wrap-around) and of the CUDA launch grids.

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ReduceFn = Value (*)(Value, std::vector<int64_t>, bool);

// Paths: every reduction path of the kernels, and long rows cut in chunks.
std::vector<OpConfig> Paths(ReduceFn f, const std::vector<DType>& dtypes) {
  return {{.name = "paths",
           .build =
               [f](CaseBuilder& b, DType d) {
                 const Value x = b.Input("x", d, {6, 300, 7}, -20, 20);
                 b.Out(f(x, {}, false));      // everything: one row
                 b.Out(f(x, {-1}, true));     // last axis: rows
                 b.Out(f(x, {1}, false));     // middle axis: columns, three chunks
                 b.Out(f(x, {0, 1}, false));  // leading axes: columns, fifteen chunks
                 b.Out(f(x, {0, 2}, true));   // not contiguous: the odometer
                 b.Out(f(b.Input("e", d, {3, 0, 2}), {1}, false));  // empty: 0, or -inf / lowest()
               },
           .dtypes = dtypes,
           .modes = kBackendModes},
          {.name = "long_rows",
           .build =
               [f](CaseBuilder& b, DType d) {
                 const Value x = b.Input("x", d, {3, 40000}, -20, 20);
                 b.Out(f(x, {-1}, false));  // few long rows: chunks of a row, then their partials
                 b.Out(f(x, {}, false));
               },
           .dtypes = dtypes,
           .modes = kBackendModes}};
}

CaseBuild Bench(ReduceFn f) {
  return [f](CaseBuilder& b, DType d) { b.Out(f(b.Input("x", d, {1024, 1024}), {-1}, false)); };
}

OpCase Reduction(ReduceFn f, const std::vector<DType>& dtypes, std::vector<OpConfig> configs) {
  OpCase c{.configs = std::move(configs), .bench = Bench(f)};
  for (OpConfig& p : Paths(f, dtypes)) c.configs.push_back(std::move(p));
  return c;
}

// Integer sums wrap around (two's complement), on the CPU through WrapAdd
// and on CUDA through the same function in every tree and pass; int32
// sums are taken in int64 and wrap on the way back to int32.
void WrapsAround(CaseBuilder& b, DType) {
  std::vector<int32_t> i32(600);
  std::vector<int64_t> i64(600), long_rows(80000);
  for (int i = 0; i < 600; ++i) {
    i32[i] = std::numeric_limits<int32_t>::max() - 3 * i;
    i64[i] = std::numeric_limits<int64_t>::max() - 7 * i;
  }
  for (int i = 0; i < 80000; ++i) long_rows[i] = std::numeric_limits<int64_t>::max() - i;
  for (const Value x :
       {b.Fixed("i32", T<int32_t>({300, 2}, i32)), b.Fixed("i64", T<int64_t>({300, 2}, i64))}) {
    b.Out(Sum(x));                                // one row: thread partials, then a block tree
    b.Out(Sum(x, {0}));                           // columns, slices of mid
    b.Out(Sum(x, {-1}));                          // rows of two
    b.Out(Sum(Reshape(x, {10, 30, 2}), {0, 2}));  // the odometer
  }
  const Value l = b.Fixed("long_rows", T<int64_t>({2, 40000}, long_rows));
  b.Out(Sum(l, {-1}));  // chunks of a row, then their partials
  b.Out(Sum(l));
}

// float32 sums of tens of millions of values near 1, over each axis
// position and path: a float32 accumulator stalls at 2^24 = 16777216 (and
// is off by hundreds well before), so only double accumulation, on both
// backends, agrees to the default 1e-5. CUDA only: the CPU levels share
// these loops.
void LargeFloat32(CaseBuilder& b, DType) {
  const Value x = b.Input("x", DType::kFloat32, {4100, 4100}, 0.5, 1.5);
  b.Out(Sum(x));       // 16.8 M values: one row in chunks
  b.Out(Sum(x, {0}));  // columns
  b.Out(Sum(x, {1}));  // rows
  b.Out(Mean(x, {0}));
  const Value y = b.Input("y", DType::kFloat32, {300, 300, 200}, 0.5, 1.5);
  b.Out(Sum(y, {0, 2}));  // the odometer, 60000 values per output
  b.Out(Sum(y, {1}));     // a middle axis
}

// More than 128 * 65535 reduced rows: the column kernel once returned
// Unimplemented here (a bias gradient over a large B * T). CUDA only.
void PastGridLimit(CaseBuilder& b, DType d) {
  const bool f = d == DType::kFloat32;
  const Value x = b.Input("x", d, {9000000, 3}, f ? 0.5 : -20, f ? 1.5 : 20);
  b.Out(Sum(x, {0}));
  b.Out(Max(x, {0}));
  if (f) b.Out(Mean(x, {0}));
  const Value m = b.Input("m", d, {2, 4500000, 2}, f ? 0.5 : -20, f ? 1.5 : 20);
  b.Out(Sum(m, {1}));
}

}  // namespace

DAGRAD_OP_CASE(sum, Reduction(Sum, kNumeric,
                              {{.name = "all",
                                .build = Over({{"x", {2, 3, 4}}},
                                              [](Graph&, const In& in) { return Sum(in[0]); })},
                               {.name = "leading_keepdims",
                                .build = Over({{"x", {2, 3, 4}}},
                                              [](Graph&, const In& in) {
                                                return Sum(in[0], {0, 1}, true);
                                              })},
                               {.name = "non_contiguous_axes",
                                .build = Over({{"x", {2, 3, 4}}},
                                              [](Graph&, const In& in) {
                                                return Sum(in[0], {0, 2});
                                              })},
                               {.name = "wraps_around",
                                .build = WrapsAround,
                                .dtypes = {DType::kInt64},
                                .modes = kBackendModes,
                                .gradients = false},
                               {.name = "large_f32_every_axis",
                                .build = LargeFloat32,
                                .dtypes = {DType::kFloat32},
                                .modes = kCudaMode,
                                .gradients = false},
                               {.name = "columns_past_grid_limit",
                                .build = PastGridLimit,
                                .dtypes = {DType::kFloat32, DType::kInt32},
                                .modes = kCudaMode,
                                .gradients = false}}));

DAGRAD_OP_CASE(
    mean, Reduction(Mean, kFloats,
                    {
                        {.name = "last_axis",
                         .build = Over({{"x", {3, 5}}},
                                       [](Graph&, const In& in) { return Mean(in[0], {-1}); })},
                    }));

DAGRAD_OP_CASE(
    max, Reduction(
             Max, kNumeric,
             {{.name = "middle_axis",
               .build = Over({{"x", {2, 4, 3}}},
                             [](Graph&, const In& in) { return Max(in[0], {1}, true); })},
              {.name = "rows_of_minus_inf",
               .build =
                   [](CaseBuilder& b, DType) {
                     const float inf = INFINITY;
                     const Value x = b.Fixed("x", T<float>({2, 3}, {-inf, -inf, -inf, 1, -inf, 2}));
                     b.Out(Max(x, {-1}));
                     b.Out(Max(x, {0}));
                   },
               .dtypes = {DType::kFloat32},
               .modes = kBackendModes},
              // NaN first in row 0, in the middle of row 1, last in row 2, through
              // every path: NaN wherever an input is NaN (torch.amax).
              {.name = "nan_at_any_position",
               .build =
                   [](CaseBuilder& b, DType d) {
                     const Value x = b.Fixed(
                         "x", WithNaNs(Random(d, {4, 37}, 11, -5, 5), {0, 37 + 18, 74 + 36}));
                     b.Out(Max(x, {-1}));  // rows
                     b.Out(Max(x, {0}));   // columns
                     b.Out(Max(x));        // everything
                     const Value y =
                         b.Fixed("y", WithNaNs(Random(d, {3, 5, 7}, 12, -5, 5), {1, 40, 104}));
                     b.Out(Max(y, {0, 2}));  // not contiguous: the odometer
                     // Long rows cut into chunks: NaN in the last chunk of row 0, mid row 1.
                     const Value z =
                         b.Fixed("z", WithNaNs(Random(d, {2, 40000}, 13, -5, 5), {39999, 60000}));
                     b.Out(Max(z, {-1}));
                     b.Out(Max(z));
                     // Columns cut into slices of mid: NaN in a late slice only.
                     const Value w =
                         b.Fixed("w", WithNaNs(Random(d, {3000, 4}, 14, -5, 5), {2900 * 4 + 1}));
                     b.Out(Max(w, {0}));
                   },
               .modes = kBackendModes,
               .gradients = false}}));

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

Value Reduce(Value (*op)(Value, std::vector<int64_t>, bool), const GoldenInputs& in,
             const nlohmann::json& a) {
  return op(in.at("x"), GoldenInts(a["axes"]), a["keepdims"].get<bool>());
}

// Each reduction over NaN, +-inf and signed zeros along each kind of axis,
// and sum and mean over empty rows and columns.
GoldenBuilders ReduceEdges() {
  GoldenBuilders b;
  for (const char* where : {"rows", "columns", "middle", "non_contiguous", "all"}) {
    b.push_back({absl::StrCat("sum_specials_", where), G(Reduce(Sum, in, attrs))});
    b.push_back({absl::StrCat("mean_specials_", where), G(Reduce(Mean, in, attrs))});
    b.push_back({absl::StrCat("max_specials_", where), G(Reduce(Max, in, attrs))});
  }
  for (const char* where : {"rows", "columns"}) {
    b.push_back({absl::StrCat("sum_empty_", where), G(Reduce(Sum, in, attrs))});
    b.push_back({absl::StrCat("mean_empty_", where), G(Reduce(Mean, in, attrs))});
  }
  return b;
}
const bool kReduceEdges = RegisterGoldens("edges", ReduceEdges());

}  // namespace

DAGRAD_GOLDENS("basic_ops",
               {"sum_all", G(Reduce(Sum, in, attrs))},
               {"sum_last", G(Reduce(Sum, in, attrs))},
               {"sum_leading_keepdims", G(Reduce(Sum, in, attrs))},
               {"sum_non_contiguous", G(Reduce(Sum, in, attrs))},
               {"sum_middle_keepdims", G(Reduce(Sum, in, attrs))},
               {"sum_int64", G(Reduce(Sum, in, attrs))},
               {"mean_all", G(Reduce(Mean, in, attrs))},
               {"mean_last", G(Reduce(Mean, in, attrs))},
               {"mean_leading_keepdims", G(Reduce(Mean, in, attrs))},
               {"mean_non_contiguous", G(Reduce(Mean, in, attrs))},
               {"mean_middle_keepdims", G(Reduce(Mean, in, attrs))},
               {"max_all", G(Reduce(Max, in, attrs))},
               {"max_last", G(Reduce(Max, in, attrs))},
               {"max_leading_keepdims", G(Reduce(Max, in, attrs))},
               {"max_non_contiguous", G(Reduce(Max, in, attrs))},
               {"max_middle_keepdims", G(Reduce(Max, in, attrs))},
               {"max_ties", G(Reduce(Max, in, attrs))});

}  // namespace dagrad::testing
