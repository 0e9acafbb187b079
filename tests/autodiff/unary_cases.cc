// The op cases (tests/autodiff/support/op_case.h) of the unary family, ops/unary.cc:
// the elementwise math functions and relu's backward kernel (GELU's are in
// gelu_cases.cc, cast's in cast_cases.cc).

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
DAGRAD_OP_CASE(neg, UnaryCase(Neg));
DAGRAD_OP_CASE(exp, UnaryCase(Exp));
DAGRAD_OP_CASE(log, UnaryCase(Log, 0.5, 2.0));
DAGRAD_OP_CASE(sqrt, UnaryCase(Sqrt, 0.5, 2.0));
DAGRAD_OP_CASE(rsqrt, UnaryCase(Rsqrt, 0.5, 2.0));
DAGRAD_OP_CASE(sigmoid, UnaryCase(Sigmoid, -3.0, 3.0));
DAGRAD_OP_CASE(sin, UnaryCase(Sin, -3.0, 3.0));
DAGRAD_OP_CASE(cos, UnaryCase(Cos, -3.0, 3.0));
DAGRAD_OP_CASE(abs, UnaryCase(Abs));
DAGRAD_OP_CASE(erf, UnaryCase(Erf, -2.0, 2.0));
DAGRAD_OP_CASE(softplus,
               With(UnaryCase(Softplus, -3.0, 3.0),
                    {{.name = "tails",
                      .build = [](CaseBuilder& b, DType d) {
                        // Both tails: e^x below -17, x itself above the threshold 20.
                        const Value x = b.Input("x", d, {6, 50}, -40.0, 40.0);
                        Value y = Softplus(x);
                        b.Out(y);
                      }}}));

DAGRAD_OP_CASE(
    tanh,
    With(UnaryCase(Tanh, -2.0, 2.0),
         {
             // Second derivatives through elementwise chains: d/dx of d/dx sum(tanh(x) exp(x) x).
             {.name = "second_order_mixed",
              .build = Over({{"x", {5}}},
                            [](Graph&, const In& in) {
                              Value x = in[0];
                              Value loss = Sum(Mul(Mul(Tanh(x), Exp(x)), x));
                              auto grads = Gradients(loss, {x});
                              return grads.ok() ? (*grads)[0] : x.graph()->Error(grads.status());
                            })},
         }));

// relu(NaN) = NaN and its gradient passes at NaN (torch.relu,
// threshold_backward); pow(-0, 0.5) = -0 and pow(-0, -0.5) = -inf (torch
// computes these exponents by sqrt), and CPow's +0 and +inf (C's pow). The
// CUDA functors once gave relu(NaN) = 0 and pow(-0, 0.5) = +0; they are the
// CPU's own now.
DAGRAD_OP_CASE(relu,
               With(UnaryCase(Relu),
                    {{.name = "nan_and_signed_zeros",
                      .build =
                          [](CaseBuilder& b, DType d) {
                            const Value x = b.Fixed(
                                "x",
                                WithNaNs(FloatsOf(d, {6}, {-0.0, 0.0, -1.0, 2.0, 0.0, 4.0}), {4}));
                            b.Out(Relu(x));
                            b.Out(ReluGrad(x, OnesLike(x)));
                            b.Out(Pow(x, 0.5));
                            b.Out(Pow(x, -0.5));
                            b.Out(Pow(x, 3.0));
                            b.Out(CPow(x, 0.5));
                            b.Out(CPow(x, -0.5));
                          },
                      .modes = kBackendModes,
                      .gradients = false}}));

DAGRAD_OP_CASE(
    pow,
    .configs = {{.name = "cube",
                 .build = Over({{"x", {3, 2}}},
                               [](Graph&, const In& in) { return Pow(in[0], 3.0); })},
                {.name = "fractional",
                 .build = Over({{"x", {3, 2}, std::nullopt, 0.5, 2.0}},
                               [](Graph&, const In& in) { return Pow(in[0], -1.5); })},
                {.name = "exponents",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value x = b.Input("x", d, {5, 61}, 0.2, 2);
                       b.Out(Pow(x, 2.0));
                       b.Out(Pow(x, 3.0));
                       b.Out(Pow(x, -0.5));
                     },
                 .modes = kBackendModes},
                // C's pow (ONNX's Pow), its gradient CPow(x, -0.5) / 2.
                {.name = "c_pow",
                 .build = [](CaseBuilder& b, DType d) {
                   const Value x = b.Input("x", d, {3, 2}, 0.5, 2.0);
                   Value y = CPow(x, 0.5);                  // -0.0 -> +0, -inf -> +inf
                   b.Out(y);
                   b.Out(CPow(x, -1.5));
                 }}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Pow(b.Input("x", d, {1024, 1024}, 0.2, 2), -0.5));
    });

DAGRAD_OP_CASE(
    scale,
    .configs = {{.name = "scale_and_shift",
                 .build = Over({{"x", {4}}},
                               [](Graph&, const In& in) {
                                 return AddScalar(Scale(in[0], -2.5), 0.75);
                               })},
                {.name = "vector",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value x = b.Input("x", d, {1000});
                       b.Out(Scale(x, 2.5));
                       b.Out(AddScalar(Scale(x, -0.3), 0.7));
                     },
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Scale(b.Input("x", d, {1024, 1024}), 2.5));
    });

// relu_grad is checked through a second derivative: d/dw of the gradient
// of sum(relu(x) * w) with respect to x; and called directly.
DAGRAD_OP_CASE(
    relu_grad,
    .configs =
        {// relu_grad is checked through a second derivative: d/dw of the gradient
         // of sum(relu(x) * w) with respect to x.
         {.name = "second_order",
          .build = Over({{"x", {6}}, {"w", {6}}},
                        [](Graph&, const In& in) {
                          Value loss = Sum(Mul(Relu(in[0]), in[1]));
                          auto grads = Gradients(loss, {in[0]});
                          return grads.ok() ? (*grads)[0] : loss.graph()->Error(grads.status());
                        })},
         {.name = "direct",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(ReluGrad(b.Input("x", d, {9, 33}, -3, 3), b.Input("g", d, {9, 33})));
              },
          .modes = kBackendModes,
          .gradients = false}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(ReluGrad(b.Input("x", d, {1024, 1024}), b.Input("g", d, {1024, 1024})));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {


// Pow at each exponent torch special-cases, and float64 at 0.
GoldenBuilders PowEdges() {
  GoldenBuilders b;
  for (const char* p : {"0", "1", "2", "3", "half", "minus_half", "minus_1", "minus_2",
                        "minus_1_5", "2_5"}) {
    b.push_back({absl::StrCat("pow_", p, "_specials"), G(Pow(in.at("x"), attrs["exponent"]))});
  }
  b.push_back({"pow_0_specials_float64", G(Pow(in.at("x"), attrs["exponent"]))});
  return b;
}
const bool kPowEdges = RegisterGoldens("edges", PowEdges());

}  // namespace

DAGRAD_GOLDENS("basic_ops",
               {"neg", G(Neg(in.at("x")))},
               {"exp", G(Exp(in.at("x")))},
               {"log", G(Log(in.at("x")))},
               {"sqrt", G(Sqrt(in.at("x")))},
               {"rsqrt", G(Rsqrt(in.at("x")))},
               {"pow_square", G(Pow(in.at("x"), attrs["exponent"]))},
               {"pow_cube", G(Pow(in.at("x"), attrs["exponent"]))},
               {"pow_fractional", G(Pow(in.at("x"), attrs["exponent"]))},
               {"scale", G(Scale(in.at("x"), attrs["factor"]))},
               {"add_scalar", G(AddScalar(in.at("x"), attrs["offset"]))},
               {"relu", G(Relu(in.at("x")))},
               {"tanh", G(Tanh(in.at("x")))},
               {"sigmoid", G(Sigmoid(in.at("x")))},
               {"sin", G(Sin(in.at("x")))},
               {"cos", G(Cos(in.at("x")))},
               {"sin_float64", G(Sin(in.at("x")))},
               {"softplus_tails", G(Softplus(in.at("x")))},
               {"erf", G(Erf(in.at("x")))},
               {"relu_grad", G(ReluGrad(in.at("x"), in.at("g")))});

DAGRAD_GOLDENS("edges",
               {"neg_specials", G(Neg(in.at("x")))},
               {"exp_specials", G(Exp(in.at("x")))},
               {"log_specials", G(Log(in.at("x")))},
               {"sqrt_specials", G(Sqrt(in.at("x")))},
               {"rsqrt_specials", G(Rsqrt(in.at("x")))},
               {"relu_specials", G(Relu(in.at("x")))},
               {"tanh_specials", G(Tanh(in.at("x")))},
               {"sigmoid_specials", G(Sigmoid(in.at("x")))},
               {"sin_specials", G(Sin(in.at("x")))},
               {"cos_specials", G(Cos(in.at("x")))},
               {"scale_specials", G(Scale(in.at("x"), attrs["factor"]))},
               {"add_scalar_specials", G(AddScalar(in.at("x"), attrs["offset"]))},
               {"abs_specials", G(Abs(in.at("x")))},
               {"abs_nonfinite_seed", G(Abs(in.at("x")))});

}  // namespace dagrad::testing
