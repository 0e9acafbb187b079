// The op cases (tests/autodiff/support/op_case.h) of GELU, ops/gelu.cc: both forms
// (approximate "none" and "tanh"), forward and the backward kernel, over
// the ranges where the float32 kernels switch branches and far into the
// tails.

#include "ops/fill.h"
#include "ops/gelu.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

Value GeluTanh(Value x) { return Gelu(x, GeluApproximate::kTanh); }

// A (37, 129) config of `f` over [-lo, lo): every kernel's vector path and
// tail, on the backends only.
OpConfig Wide(const char* name, Value (*f)(Value), double lo) {
  return {.name = name,
          .build =
              [f, lo](CaseBuilder& b, DType d) {
                b.Out(f(b.Input("x", d, {37, 129}, -lo, lo)));
              },
          .modes = kBackendModes};
}

// gelu_grad(x, g) of `form`, built directly: its own gradient (GELU's
// second derivative) checked by finite differences, and the backends.
OpConfig Direct(const char* name, GeluApproximate form) {
  return {.name = name,
          .build = [form](CaseBuilder& b, DType d) {
            b.Out(GeluGrad(b.Input("x", d, {9, 33}, -4, 4), b.Input("g", d, {9, 33}), form));
          }};
}

}  // namespace

DAGRAD_OP_CASE(
    gelu,
    With(UnaryCase([](Value x) { return Gelu(x); }, -3.0, 3.0),
         {{.name = "tanh",
           .build = Over({{"x", {4, 9}, std::nullopt, -5.0, 5.0}},
                         [](Graph&, const In& in) { return GeluTanh(in[0]); })},
          Wide(
              "exact_tails", [](Value x) { return Gelu(x); }, 9.0),
          Wide("tanh_tails", GeluTanh, 9.0)}));

DAGRAD_OP_CASE(
    gelu_grad,
    .configs = {Direct("direct", GeluApproximate::kNone),
                Direct("direct_tanh", GeluApproximate::kTanh)},
    .bench =
        [](CaseBuilder& b, DType d) {
          b.Out(GeluGrad(b.Input("x", d, {1024, 1024}),
                         b.Input("g", d, {1024, 1024})));
        });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

Value GeluOf(const GoldenInputs& in, const nlohmann::json& a) {
  return Gelu(in.at("x"), a["approximate"] == "tanh" ? GeluApproximate::kTanh
                                                      : GeluApproximate::kNone);
}

}  // namespace

// gelu' as gelu_grad with a seed of ones: its gradient is gelu''.
DAGRAD_GOLDENS("edges", {"gelu_tanh_second_derivative",
                         G(GeluGrad(in.at("x"), OnesLike(in.at("x")), GeluApproximate::kTanh))});

DAGRAD_GOLDENS("basic_ops",
               {"gelu_exact", G(Gelu(in.at("x")))},
               {"gelu_grad", G(GeluGrad(in.at("x"), in.at("g")))});

// Both forms (the "approximate" attribute, as torch's).
DAGRAD_GOLDENS("nn_ops",
               {"gelu_none_wide", G(GeluOf(in, attrs))},
               {"gelu_none_near_switch", G(GeluOf(in, attrs))},
               {"gelu_none_float64", G(GeluOf(in, attrs))},
               {"gelu_tanh_wide", G(GeluOf(in, attrs))},
               {"gelu_tanh_near_switch", G(GeluOf(in, attrs))},
               {"gelu_tanh_float64", G(GeluOf(in, attrs))});

DAGRAD_GOLDENS("edges",
               {"gelu_specials", G(Gelu(in.at("x")))});

}  // namespace dagrad::testing
