// The op case (tests/autodiff/support/op_case.h) of where, ops/select.cc.

#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

Tensor Bools(const Shape& shape, const std::vector<bool>& v) {
  return *Tensor::FromVector<bool>(shape, v);
}

}  // namespace

DAGRAD_OP_CASE(
    where,
    .configs =
        {{.name = "same_shape",
          .build = Over({{"cond", {2, 3}, Bools({2, 3}, {true, false, false, true, true, false})},
                         {"a", {2, 3}},
                         {"b", {2, 3}}},
                        [](Graph&, const In& in) { return Where(in[0], in[1], in[2]); })},
         // Every input broadcast along a different axis: (2,1,4), (3,1), (4,) -> (2,3,4).
         {.name = "broadcast_all",
          .build = Over({{"cond",
                          {2, 1, 4},
                          Bools({2, 1, 4}, {true, false, true, true, false, false, true, false})},
                         {"a", {3, 1}},
                         {"b", {4}}},
                        [](Graph&, const In& in) { return Where(in[0], in[1], in[2]); })},
         // A 0-d b (a fill value), and a condition broadcast over rows.
         {.name = "scalar_b_row_cond",
          .build = Over({{"cond", {3}, Bools({3}, {false, true, true})}, {"a", {2, 3}}, {"b", {}}},
                        [](Graph&, const In& in) { return Where(in[0], in[1], in[2]); })},
         // where's gradient is itself a where: a second derivative through it.
         {.name = "second_order",
          .build =
              Over({{"cond", {4}, Bools({4}, {true, false, true, false})}, {"a", {4}}, {"b", {4}}},
                   [](Graph&, const In& in) {
                     Value y = Where(in[0], Mul(in[1], in[1]), Mul(in[2], in[1]));
                     auto grads = Gradients(Sum(Mul(y, y)), {in[1]});
                     return grads.ok() ? (*grads)[0] : y.graph()->Error(grads.status());
                   })},
         {.name = "dtypes_broadcast",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Where(b.Input("c", DType::kBool, {3, 1, 20}, 0, 0.5),
                            b.Input("a", d, {4, 20}, -9, 9), b.Input("b", d, {3, 4, 1}, -9, 9)));
              },
          .dtypes = {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool},
          .modes = kBackendModes},
         {.name = "wide_same_shape",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Where(b.Input("c", DType::kBool, {31, 33}, 0, 0.3), b.Input("a", d, {31, 33}),
                            b.Input("b", d, {31, 33})));
              },
          .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Where(b.Input("c", DType::kBool, {1024, 1024}, 0, 0.5), b.Input("a", d, {1024, 1024}),
                  b.Input("b", d, {1024})));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

DAGRAD_GOLDENS("nn_ops",
               {"where_broadcast", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
               {"where_same_shape", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
               {"where_scalar_b", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
               {"where_int64", G(Where(in.at("cond"), in.at("a"), in.at("b")))});

DAGRAD_GOLDENS("edges",
               {"where_specials", G(Where(in.at("cond"), in.at("a"), in.at("b")))});

}  // namespace dagrad::testing
