// The op cases (tests/support/op_case.h) of fill and arange, ops/fill.cc.
// Folding is off, so that they run as kernels rather than on the host.

#include <cstdint>

#include "ops/fill.h"
#include "tests/support/op_case.h"

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

}  // namespace dagrad::testing
