// The op case (tests/autodiff/support/op_case.h) of cumsum, ops/cumsum.cc:
// each direction along each axis, on every numeric dtype, long lines split
// over the threads, and its PyTorch goldens.

#include "ops/cumsum.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

void EveryDirection(CaseBuilder& b, DType d) {
  const Value x = b.Input("x", d, {3, 4, 5}, -4.0, 4.0);
  b.Out(CumSum(x, 1));
  b.Out(CumSum(x, -1, {.exclusive = true}));
  b.Out(CumSum(x, 0, {.reverse = true}));
  b.Out(CumSum(x, 2, {.exclusive = true, .reverse = true}));
}

Value CumSumOf(const GoldenInputs& in, const nlohmann::json& attrs) {
  return CumSum(in.at("x"), attrs["axis"],
                {.exclusive = attrs["exclusive"], .reverse = attrs["reverse"]});
}

}  // namespace

DAGRAD_OP_CASE(
    cumsum,
    .configs = {{.name = "every_direction", .build = EveryDirection, .dtypes = kNumeric},
                {.name = "long_lines",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value x = b.Input("x", d, {6, 3000});
                       b.Out(CumSum(x, 1));
                       b.Out(CumSum(x, 0, {.exclusive = true}));
                     },
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) { b.Out(CumSum(b.Input("x", d, {4, 50257}), -1)); });

DAGRAD_GOLDENS("basic_ops",
               {"cumsum_inclusive", G(CumSumOf(in, attrs))},
               {"cumsum_exclusive", G(CumSumOf(in, attrs))},
               {"cumsum_reverse", G(CumSumOf(in, attrs))},
               {"cumsum_exclusive_reverse", G(CumSumOf(in, attrs))},
               {"cumsum_int64", G(CumSumOf(in, attrs))});

}  // namespace dagrad::testing
