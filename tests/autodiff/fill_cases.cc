// The op cases (tests/autodiff/support/op_case.h) of fill and arange, ops/fill.cc.
// Folding is off, so that they run as kernels rather than on the host.

#include <cmath>
#include <cstdint>

#include "ops/fill.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"

namespace dagrad::testing {

DAGRAD_OP_CASE(fill,
               .configs = {{.name = "dtypes",
                            .build =
                                [](CaseBuilder& b, DType) {
                                  Graph& g = b.graph();
                                  b.Out(Fill(g, {3, 5}, 1.5));
                                  b.Out(Fill(g, {4}, -2.25, DType::kFloat64));
                                  b.Out(Fill(g, {2, 2}, -7, DType::kInt32));
                                  b.Out(Fill(g, {5}, 1LL << 40, DType::kInt64));
                                  b.Out(Fill(g, {3}, 1, DType::kBool));
                                  // Integers no double holds, exactly on every backend.
                                  b.Out(Fill(g, {3}, (int64_t{1} << 53) + 1, DType::kInt64));
                                  b.Out(Fill(g, {2}, INT64_MAX, DType::kInt64));
                                },
                            .dtypes = {DType::kFloat32},
                            .modes = kBackendModes,
                            .fold_constants = false}},
               .flags = kIntegerOutput);

DAGRAD_OP_CASE(arange,
               .configs = {{.name = "dtypes",
                            .build =
                                [](CaseBuilder& b, DType) {
                                  Graph& g = b.graph();
                                  b.Out(Arange(g, 0, 1000, 1, DType::kInt64));
                                  b.Out(Arange(g, 1, -1, -0.125, DType::kFloat64));
                                  b.Out(Arange(g, -3, 7, 0.7, DType::kFloat32));
                                  b.Out(Arange(g, 5, -5, -3, DType::kInt32));
                                  // Beside the ends of int64, and with products past 2^63.
                                  b.Out(Arange(g, INT64_MAX - 300, INT64_MAX, 1, DType::kInt64));
                                  b.Out(Arange(g, INT64_MIN, INT64_MAX, int64_t{1} << 62,
                                               DType::kInt64));
                                },
                            .dtypes = {DType::kFloat32},
                            .modes = kBackendModes,
                            .fold_constants = false}},
               .flags = kIntegerOutput);

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

// Number reads a float attribute; JSON has no infinities, so the generators
// write them as strings.
double Number(const nlohmann::json& j) {
  if (!j.is_string()) return j.get<double>();
  const std::string s = j.get<std::string>();
  return s == "inf" ? HUGE_VAL : s == "-inf" ? -HUGE_VAL : std::nan("");
}

// FillValueOf reads a value of fill or arange: an integer as an integer.
FillValue FillValueOf(const nlohmann::json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  return Number(j);
}

Value FillOf(Graph& g, const nlohmann::json& a) {
  return Fill(g, Shape(GoldenInts(a["shape"])), FillValueOf(a["value"]), GoldenDType(a));
}

Value ArangeOf(Graph& g, const nlohmann::json& a) {
  return Arange(g, FillValueOf(a["start"]), FillValueOf(a["stop"]), FillValueOf(a["step"]),
                GoldenDType(a));
}

}  // namespace

DAGRAD_GOLDENS("nn_ops",
               {"fill_float32", G(FillOf(g, attrs))},
               {"fill_float64_inf", G(FillOf(g, attrs))},
               {"fill_int32", G(FillOf(g, attrs))},
               {"fill_int64_scalar", G(FillOf(g, attrs))},
               {"fill_bool", G(FillOf(g, attrs))},
               {"fill_empty", G(FillOf(g, attrs))},
               {"arange_int64", G(ArangeOf(g, attrs))},
               {"arange_int64_step3", G(ArangeOf(g, attrs))},
               {"arange_int32_negative_step", G(ArangeOf(g, attrs))},
               {"arange_float32_fraction", G(ArangeOf(g, attrs))},
               {"arange_float64_negative_step", G(ArangeOf(g, attrs))},
               {"arange_float32_default_step", G(ArangeOf(g, attrs))},
               {"zeros_like_float32", G(ZerosLike(in.at("x")))},
               {"ones_like_int64", G(OnesLike(in.at("x")))},
               {"ones_like_bool", G(OnesLike(in.at("x")))});

}  // namespace dagrad::testing
