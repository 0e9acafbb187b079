// The op cases (tests/autodiff/support/op_case.h) of the binary family,
// ops/binary.cc: arithmetic, comparisons and logic.

#include <cmath>
#include <limits>
#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Ties: whole numbers, so that maximum's and minimum's gradient goes to a
// (a is float through x * 0, which takes the gradient).
OpConfig Ties(Value (*f)(Value, Value)) {
  return {.name = "ties",
          .build =
              [f](CaseBuilder& b, DType d) {
                const Value a = Add(Cast(b.Input("ia", DType::kInt64, {6, 50}, -3, 3), d),
                                    Scale(b.Input("x", d, {6, 50}), 0.0));
                b.Out(f(a, Cast(b.Input("ib", DType::kInt64, {50}, -3, 3), d)));
              },
          .modes = kBackendModes};
}

// NaN in a alone, in c alone, and in both at (0, 0), broadcast or not: NaN
// wherever an input is NaN (torch.maximum, torch.minimum).
OpConfig NaNs(Value (*f)(Value, Value)) {
  return {.name = "nan",
          .build =
              [f](CaseBuilder& b, DType d) {
                const Value a = b.Fixed("a", WithNaNs(Random(d, {3, 40}, 15, -2, 2), {0, 41, 119}));
                const Value c = b.Fixed("c", WithNaNs(Random(d, {40}, 16, -2, 2), {0, 7, 39}));
                const Value e = b.Fixed("e", WithNaNs(Random(d, {3, 40}, 17, -2, 2), {5, 41, 100}));
                b.Out(f(a, c));
                b.Out(f(c, a));
                b.Out(f(a, e));
              },
          .modes = kBackendModes,
          .gradients = false};
}

// A comparison over every numeric dtype (not differentiable).
OpCase Comparison(Value (*f)(Value, Value)) {
  const CaseBuild build = [f](CaseBuilder& b, DType d) {
    b.Out(f(b.Input("a", d, {5, 1, 30}, -3, 3), b.Input("b", d, {4, 30}, -3, 3)));
  };
  return {.configs =
              {{.name = "broadcast", .build = build, .dtypes = kNumeric, .modes = kBackendModes}},
          .bench =
              [f](CaseBuilder& b, DType d) {
                b.Out(f(b.Input("a", d, {1024, 1024}), b.Input("b", d, {1024})));
              },
          .flags = kIntegerOutput};
}

// A logical op over bools (not differentiable): `f(p, q)` over (3, 1, 40)
// and (5, 40), benched over (1024, 1024) and (1024).
OpCase Logic(Value (*f)(Value, Value)) {
  const auto at = [f](Shape p, Shape q) {
    return [f, p, q](CaseBuilder& b, DType) {
      b.Out(f(b.Input("p", DType::kBool, p, 0, 0.5), b.Input("q", DType::kBool, q, 0, 0.5)));
    };
  };
  return {.configs = {{.name = "broadcast",
                       .build = at({3, 1, 40}, {5, 40}),
                       .dtypes = {DType::kBool},
                       .modes = kBackendModes}},
          .bench = at({1024, 1024}, {1024}),
          .flags = kIntegerOutput};
}

}  // namespace

DAGRAD_OP_CASE(add, BinaryCase(Add));
DAGRAD_OP_CASE(sub,
               With(BinaryCase(Sub),
                    {
                        {.name = "broadcast_leading",
                         .build = Over({{"a", {4}}, {"b", {2, 3, 4}}},
                                       [](Graph&, const In& in) { return Sub(in[0], in[1]); })},
                    }));
DAGRAD_OP_CASE(mul,
               With(BinaryCase(Mul),
                    {
                        {.name = "broadcast_both",
                         .build = Over({{"a", {2, 1, 4}}, {"b", {3, 1}}},
                                       [](Graph&, const In& in) { return Mul(in[0], in[1]); })},
                        {.name = "same_input_twice",
                         .build = Over({{"a", {5}}},
                                       [](Graph&, const In& in) { return Mul(in[0], in[0]); })},
                    }));
DAGRAD_OP_CASE(maximum,
               With(BinaryCase(Maximum),
                    {{.name = "broadcast_row",
                      .build = Over({{"a", {3, 4}}, {"b", {4}}},
                                    [](Graph&, const In& in) { return Maximum(in[0], in[1]); })},
                     Ties(Maximum),
                     NaNs(Maximum)}));
DAGRAD_OP_CASE(minimum,
               With(BinaryCase(Minimum),
                    {{.name = "small_same_shape",
                      .build = Over({{"a", {3, 4}}, {"b", {3, 4}}},
                                    [](Graph&, const In& in) { return Minimum(in[0], in[1]); })},
                     Ties(Minimum),
                     NaNs(Minimum)}));

DAGRAD_OP_CASE(
    atan2,
    .configs = {{.name = "quadrants",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       Value y = b.Input("y", d, {3, 40}, -2.0, 2.0);
                       Value x = b.Input("x", d, {40}, -2.0, 2.0);
                       Value angle = Atan2(y, x);
                       b.Out(angle);
                     }},
                {.name = "same_shape",
                 .build = Over({{"y", {33, 65}}, {"x", {33, 65}}},
                               [](Graph&, const In& in) { return Atan2(in[0], in[1]); }),
                 .modes = kBackendModes},
                // The signed zeros and infinities of C's atan2, on every backend.
                {.name = "edges",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value y = b.Fixed("y", FloatsOf(d, {6}, {0.0, -0.0, 0.0, -0.0, 1.0, INFINITY}));
                       const Value x = b.Fixed("x", FloatsOf(d, {6}, {-0.0, -0.0, 0.0, -1.0, -INFINITY, INFINITY}));
                       b.Out(Atan2(y, x));
                     },
                 .modes = kBackendModes,
                 .gradients = false}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Atan2(b.Input("y", d, {1024, 1024}), b.Input("x", d, {1024})));
    });

// x in (0.5, 2) so that log(x), the exponent's gradient, is defined.
DAGRAD_OP_CASE(
    pow_tensor,
    .configs = {{.name = "broadcast",
                 .build = Over({{"x", {3, 40}, std::nullopt, 0.5, 2.0},
                                {"p", {40}, std::nullopt, -2.0, 3.0}},
                               [](Graph&, const In& in) { return PowTensor(in[0], in[1]); })}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(PowTensor(b.Input("x", d, {1024, 1024}, 0.5, 2.0), b.Input("p", d, {1024})));
    });

DAGRAD_OP_CASE(
    div,
    .configs =
        {{.name = "broadcast",
          .build = Over({{"a", {2, 3}}, {"b", {3}, std::nullopt, 0.5, 1.5}},
                        [](Graph&, const In& in) { return Div(in[0], in[1]); })},
         {.name = "broadcast_numeric",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Div(b.Input("a", d, {4, 1, 50}, -50, 50), b.Input("b", d, {3, 1}, 1, 9)));
              },
          .dtypes = kNumeric,
          .modes = kBackendModes},
         // Integer division by zero fails alike on every backend.
         {.name = "by_zero",
          .build =
              [](CaseBuilder& b, DType) {
                b.Out(Div(b.Input("a", DType::kInt64, {2, 3}, 1, 5),
                          b.Fixed("b", T<int64_t>({3}, {2, 0, 0}))));
              },
          .dtypes = {DType::kInt64},
          .modes = kBackendModes,
          .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Div(b.Input("a", d, {1024, 1024}), b.Input("b", d, {1024}, 1, 2)));
    });

DAGRAD_OP_CASE(equal, Comparison(Equal));
DAGRAD_OP_CASE(less, Comparison(Less));
DAGRAD_OP_CASE(greater, Comparison(Greater));

DAGRAD_OP_CASE(logical_and, Logic(LogicalAnd));
DAGRAD_OP_CASE(logical_or, Logic(LogicalOr));
DAGRAD_OP_CASE(
    logical_not,
    .configs = {{.name = "broadcast",
                 .build =
                     [](CaseBuilder& b, DType) {
                       b.Out(LogicalNot(b.Input("q", DType::kBool, {5, 40}, 0, 0.5)));
                     },
                 .dtypes = {DType::kBool},
                 .modes = kBackendModes}},
    .bench =
        [](CaseBuilder& b, DType) {
          b.Out(LogicalNot(b.Input("q", DType::kBool, {1024, 1024}, 0, 0.5)));
        },
    .flags = kIntegerOutput);

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

DAGRAD_GOLDENS("basic_ops",
               {"add_broadcast", G(Add(in.at("a"), in.at("b")))},
               {"sub_broadcast_leading", G(Sub(in.at("a"), in.at("b")))},
               {"mul_broadcast_both", G(Mul(in.at("a"), in.at("b")))},
               {"div_broadcast", G(Div(in.at("a"), in.at("b")))},
               {"maximum_broadcast", G(Maximum(in.at("a"), in.at("b")))},
               {"minimum_same_shape", G(Minimum(in.at("a"), in.at("b")))},
               {"add_int64", G(Add(in.at("a"), in.at("b")))},
               {"mul_float64", G(Mul(in.at("a"), in.at("b")))},
               {"equal_broadcast", G(Equal(in.at("a"), in.at("b")))},
               {"less_broadcast", G(Less(in.at("a"), in.at("b")))},
               {"greater_broadcast", G(Greater(in.at("a"), in.at("b")))},
               {"less_int64", G(Less(in.at("a"), in.at("b")))},
               {"logical_and_broadcast", G(LogicalAnd(in.at("a"), in.at("b")))},
               {"logical_or_broadcast", G(LogicalOr(in.at("a"), in.at("b")))},
               {"logical_not", G(LogicalNot(in.at("a")))},
               {"atan2_quadrants", G(Atan2(in.at("y"), in.at("x")))},
               {"pow_tensor_broadcast", G(PowTensor(in.at("x"), in.at("p")))});

DAGRAD_GOLDENS("edges",
               {"add_specials", G(Add(in.at("a"), in.at("b")))},
               {"sub_specials", G(Sub(in.at("a"), in.at("b")))},
               {"mul_specials", G(Mul(in.at("a"), in.at("b")))},
               {"div_specials", G(Div(in.at("a"), in.at("b")))},
               {"maximum_specials", G(Maximum(in.at("a"), in.at("b")))},
               {"maximum_nan_broadcast", G(Maximum(in.at("a"), in.at("b")))},
               {"maximum_infinities_grad", G(Maximum(in.at("a"), in.at("b")))},
               {"minimum_specials", G(Minimum(in.at("a"), in.at("b")))},
               {"minimum_infinities_grad", G(Minimum(in.at("a"), in.at("b")))},
               {"equal_specials", G(Equal(in.at("a"), in.at("b")))},
               {"less_specials", G(Less(in.at("a"), in.at("b")))},
               {"greater_specials", G(Greater(in.at("a"), in.at("b")))},
               {"pow_tensor_zeros", G(PowTensor(in.at("x"), in.at("p")))},
               {"pow_tensor_overflowing_seed", G(PowTensor(in.at("x"), in.at("p")))});

}  // namespace dagrad::testing
