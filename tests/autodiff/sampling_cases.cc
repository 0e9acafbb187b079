// The op cases (tests/autodiff/support/op_case.h) of the sampling ops,
// ops/sampling.cc: argmax and topk along every kind of axis in each
// numeric dtype, ties included, bit for bit; multinomial's draws bit for
// bit, and the error of a row that is no distribution. None is
// differentiable: backends only, timed forward only.

#include "ops/sampling.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Integers in [0, 4) in every dtype: ties everywhere, resolved alike.
OpConfig AlongEachAxis(Value (*f)(Value, int64_t)) {
  return {.name = "axes",
          .build =
              [f](CaseBuilder& b, DType d) {
                const Value x = b.Input("x", d, {5, 17, 3}, 0, 4);
                for (int64_t axis : {0, 1, -1}) b.Out(f(x, axis));
              },
          .dtypes = kNumeric,
          .modes = kBackendModes,
          .exact = true,
          .gradients = false};
}

OpCase SamplingCase(Value (*f)(Value, int64_t)) {
  return {.configs = {AlongEachAxis(f)},
          .bench =
              [f](CaseBuilder& b, DType d) {
                b.Out(f(b.Input("x", d, {1024, 1024}), -1));
              },
          .flags = kIntegerOutput};
}

Value ArgMaxOf(Value x, int64_t axis) { return ArgMax(x, axis); }
Value TopValues(Value x, int64_t axis) { return TopK(x, 3, axis).values; }
Value TopIndices(Value x, int64_t axis) { return TopK(x, 3, axis).indices; }

}  // namespace

DAGRAD_OP_CASE(argmax, SamplingCase(ArgMaxOf));
// topk_values is float but not differentiable: flagged as integer output
// (nothing to gradcheck, timed forward only).
DAGRAD_OP_CASE(topk_values, SamplingCase(TopValues));
DAGRAD_OP_CASE(topk_indices, SamplingCase(TopIndices));

DAGRAD_OP_CASE(
    multinomial,
    .configs =
        {{.name = "rows",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Multinomial(b.Input("probs", d, {300, 50}, 0, 1), 7));
                b.Out(Multinomial(b.Input("weights", d, {4, 2, 1000}, 0, 5),
                                  1ULL << 40));
              },
          .modes = kBackendModes,
          .exact = true,
          .gradients = false},
         {.name = "not_a_distribution",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Multinomial(
                    b.Fixed("p", FloatsOf(d, {3, 2}, {0.5, 0.5, 0, 0, 1, 2})),
                    1));
              },
          .modes = kBackendModes,
          .expect_error = true}},
    .bench =
        [](CaseBuilder& b, DType d) {
          b.Out(Multinomial(b.Input("p", d, {1024, 1024}, 0, 1), 1));
        },
    .flags = kIntegerOutput);

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

DAGRAD_GOLDENS("nn_ops",
               {"argmax_rows", G(ArgMax(in.at("x"), attrs["axis"]))},
               {"argmax_axis0", G(ArgMax(in.at("x"), attrs["axis"]))},
               {"argmax_middle_axis", G(ArgMax(in.at("x"), attrs["axis"]))},
               {"argmax_ties_int64", G(ArgMax(in.at("x"), attrs["axis"]))},
               {"argmax_nan", G(ArgMax(in.at("x"), attrs["axis"]))},
               {"topk_values_rows", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
               {"topk_indices_rows", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
               {"topk_values_middle_axis", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
               {"topk_indices_middle_axis", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
               {"topk_values_int32", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
               {"topk_indices_int32", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
               {"topk_values_float64_axis0", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
               {"topk_indices_float64_axis0",
                G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
               {"topk_values_k_zero", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
               {"topk_indices_k_zero", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)});

}  // namespace dagrad::testing
