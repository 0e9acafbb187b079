// The op case (tests/autodiff/support/op_case.h) of cast, ops/cast.cc: every dtype
// to every dtype, the 16-bit floats included, and the casts that must fail.

#include <cmath>
#include <string>
#include <vector>

#include "ops/elementwise.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

const std::vector<DType> kEveryDType(std::begin(kAllDTypes), std::end(kAllDTypes));

// CastTo is the config casting every dtype to `to`, with values every
// target can hold.
OpConfig CastTo(DType to) {
  return {.name = std::string("to_") + DTypeSuffix(to),
          .build =
              [to](CaseBuilder& b, DType d) {
                b.Out(Cast(b.Input("x", d, {7, 45}, -100, d == DType::kBool ? 0.5 : 100), to));
              },
          .dtypes = kEveryDType,
          .modes = kBackendModes};
}

// A cast the target cannot hold fails alike on every backend.
OpConfig CastError(const char* name, Tensor value, DType to) {
  return {.name = name,
          .build = [value, to](CaseBuilder& b, DType) { b.Out(Cast(b.Fixed("x", value), to)); },
          .dtypes = {value.dtype()},
          .modes = kBackendModes,
          .expect_error = true};
}

// Rounding edges of the 16-bit floats from float32: NaN of either sign,
// infinities, signed zeros, subnormals of both formats, ties, overflow.
Tensor Edges() {
  return T<float>({12}, {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, std::ldexp(1.0f, -133),
                         std::ldexp(3.0f, -25), 1.00390625f, 1.01171875f, 3.4e38f, 65520.0f});
}

}  // namespace

DAGRAD_OP_CASE(
    cast,
    .configs = {{.name = "float_to_float",
                 .build = Over({{"x", {3}}},
                               [](Graph&, const In& in) {
                                 return Cast(Cast(in[0], DType::kFloat64), DType::kFloat64);
                               })},
                CastTo(DType::kFloat32),
                CastTo(DType::kFloat64),
                CastTo(DType::kInt32),
                CastTo(DType::kInt64),
                CastTo(DType::kBool),
                CastTo(DType::kBFloat16),
                CastTo(DType::kFloat16),
                {.name = "edges_to_16_bits",
                 .build =
                     [](CaseBuilder& b, DType) {
                       const Value x = b.Fixed("x", Edges());
                       b.Out(Cast(x, DType::kBFloat16));
                       b.Out(Cast(x, DType::kFloat16));
                     },
                 .dtypes = {DType::kFloat32},
                 .modes = kCudaMode | kIsaMode,
                 .exact = true},
                CastError("out_of_range", T<double>({4}, {1, 2, 3e9, NAN}), DType::kInt32),
                CastError("nan", T<float>({3}, {NAN, 1, 2}), DType::kInt64),
                CastError("bf16_inf", *ConvertFloats(T<float>({2}, {1, -INFINITY}),
                                                     DType::kBFloat16),
                          DType::kInt32)},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Cast(b.Input("x", d, {1024, 1024}), DType::kFloat64));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

DAGRAD_GOLDENS("basic_ops",
               {"cast_float32_to_int64", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_float32_to_int32", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_float32_to_bool", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_float32_to_float64", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_float64_to_float32", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_int64_to_float32", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_bool_to_float32", G(Cast(in.at("x"), GoldenDType(attrs)))});

DAGRAD_GOLDENS("edges",
               {"cast_specials_to_float64", G(Cast(in.at("x"), GoldenDType(attrs)))},
               {"cast_float64_overflow_to_float32", G(Cast(in.at("x"), GoldenDType(attrs)))});

}  // namespace dagrad::testing
