// The op case (tests/autodiff/support/op_case.h) of dropout, ops/dropout.cc: masks
// bit for bit on every backend and kernel level.

#include <cmath>
#include <limits>
#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Negative, signed-zero, NaN and infinite inputs, bit for bit: a dropped
// element is x * 0 on every backend (ops/math/dropout_math.h).
void SignsAndNaNs(CaseBuilder& b, DType d) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> kinds = {-1.5, 2.0, NAN, inf, -inf, -0.0, 0.0};
  std::vector<double> v(1001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = kinds[i % kinds.size()];
  const Value x = b.Fixed("x", FloatsOf(d, {1001}, v));
  b.Out(Dropout(x, 0.3));
  b.Out(Dropout(Neg(x), 0.5));
}

}  // namespace

DAGRAD_OP_CASE(
    dropout,
    .configs =
        {{.name = "small_training",
          .build = Over({{"x", {4, 7}}}, [](Graph&, const In& in) { return Dropout(in[0], 0.4); }),
          .training = true},
         {.name = "small_eval",
          .build = Over({{"x", {3, 5}}}, [](Graph&, const In& in) { return Dropout(in[0], 0.4); })},
         // Two dropouts of the same value draw independent masks; the second-order
         // case differentiates the backward dropout op itself.
         {.name = "training_second_order",
          .build = Over({{"x", {9}}, {"w", {9}}},
                        [](Graph&, const In& in) {
                          Value y = Mul(Dropout(in[0], 0.5), Dropout(Mul(in[0], in[0]), 0.25));
                          auto grads = Gradients(Sum(Mul(y, in[1])), {in[0]});
                          return grads.ok() ? (*grads)[0] : y.graph()->Error(grads.status());
                        }),
          .training = true},
         // Odd sizes, both dtypes, backward: masks bit for bit.
         {.name = "training",
          .build =
              [](CaseBuilder& b, DType d) {
                const Value x = b.Input("x", d, {3, 1001});
                b.Out(Dropout(x, 0.1));
                b.Out(Dropout(Scale(x, 2.0), 0.5));
                b.Out(Dropout(b.Input("tiny", d, {3}), 0.5));
              },
          .modes = kBackendModes,
          .exact = true,
          .training = true},
         {.name = "eval",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Dropout(b.Input("x", d, {7, 9}), 0.3));
              },
          .modes = kBackendModes,
          .exact = true},
         {.name = "signs_and_nans",
          .build = SignsAndNaNs,
          .modes = kBackendModes,
          .exact = true,
          .training = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Dropout(b.Input("x", d, {1024, 1024}), 0.1));
    });

}  // namespace dagrad::testing
