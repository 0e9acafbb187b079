// The op cases (tests/autodiff/support/op_case.h) of layer_norm and its fused
// backward ops, ops/layer_norm.cc.

#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// LayerNormDx outputs d/dx of sum(layer_norm(x, gamma) * w), x of `shape`:
// layer_norm_grad, called as autodiff calls it.
CaseBuild LayerNormDx(Shape shape) {
  return [shape](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, shape, -2, 5);
    const Value gamma = b.Input("gamma", d, {shape.dims().back()});
    const Value y = LayerNorm(x, gamma, Value());
    auto dx = Gradients(Sum(Mul(y, b.Input("w", d, shape))), {x});
    b.Out(dx.ok() ? (*dx)[0] : b.graph().Error(dx.status()));
  };
}

// LayerNormDParams outputs d/d(gamma, beta) of sum(layer_norm(x, gamma,
// beta) * w), x of `shape`: layer_norm_param_grad, called as autodiff calls it.
CaseBuild LayerNormDParams(Shape shape) {
  return [shape](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, shape, -2, 5);
    const Value gamma = b.Input("gamma", d, {shape.dims().back()});
    const Value beta = b.Input("beta", d, {shape.dims().back()});
    const Value y = LayerNorm(x, gamma, beta);
    auto grads = Gradients(Sum(Mul(y, b.Input("w", d, shape))), {gamma, beta});
    if (!grads.ok()) {
      b.Out(b.graph().Error(grads.status()));
      return;
    }
    b.Out((*grads)[0]);
    b.Out((*grads)[1]);
  };
}

// The example of ops/layer_norm.h, gradchecked: the rule's two ops.
void LayerNormParamGradExample(CaseBuilder& b, DType d) {
  const Value x = b.Input("x", d, {2, 3, 5}, -2, 5);
  const Value dy = b.Input("dy", d, {2, 3, 5});
  Value dparams = LayerNormParamGrad(x, dy, 1e-5);  // (2, E): dgamma, dbeta
  b.Out(dparams);
}

}  // namespace

DAGRAD_OP_CASE(
    layer_norm,
    .configs =
        {{.name = "affine_3d",
          .build = Over({{"x", {2, 3, 5}}, {"gamma", {5}}, {"beta", {5}}},
                        [](Graph&, const In& in) { return LayerNorm(in[0], in[1], in[2]); })},
         {.name = "no_affine",
          .build = Over({{"x", {4, 6}, std::nullopt, -2.0, 2.0}},
                        [](Graph&, const In& in) { return LayerNorm(in[0], Value(), Value()); })},
         {.name = "gamma_only",
          .build = Over({{"x", {3, 4}}, {"gamma", {4}}},
                        [](Graph&, const In& in) {
                          return LayerNorm(in[0], in[1], Value(), 1e-3);
                        })},
         {.name = "beta_only_1d",
          .build = Over({{"x", {7}}, {"beta", {7}}},
                        [](Graph&, const In& in) { return LayerNorm(in[0], Value(), in[1]); })},
         // dgamma's and dbeta's own derivatives (through mul, layer_norm, sum):
         // d/d(x, gamma, w) of d/dgamma sum(layer_norm(x, gamma, beta)^2 * w).
         {.name = "dgamma_second_order",
          .build = Over({{"x", {3, 4}}, {"gamma", {4}}, {"beta", {4}}, {"w", {3, 4}}},
                        [](Graph&, const In& in) {
                          Value y = LayerNorm(in[0], in[1], in[2]);
                          auto grads = Gradients(Sum(Mul(Mul(y, y), in[3])), {in[1]});
                          return grads.ok() ? (*grads)[0] : y.graph()->Error(grads.status());
                        })},
         {.name = "wide",
          .build =
              [](CaseBuilder& b, DType d) {
                const Value x = b.Input("x", d, {2, 3, 300}, -2, 5);
                const Value gamma = b.Input("gamma", d, {300}), beta = b.Input("beta", d, {300});
                b.Out(LayerNorm(x, gamma, beta));
                b.Out(LayerNorm(x, Value(), Value(), 1e-3));
                b.Out(LayerNorm(x, gamma, Value()));
                b.Out(LayerNorm(b.Input("v", d, {7}), Value(), b.Input("v_beta", d, {7})));
              },
          .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(LayerNorm(b.Input("x", d, {2048, 512}), b.Input("gamma", d, {512}),
                      b.Input("beta", d, {512})));
    });

// layer_norm_grad, LayerNorm's fused dx, has no rule of its own: a second
// derivative in x would need a third fused kernel.
DAGRAD_OP_CASE(layer_norm_grad,
               .configs = {{.name = "dx",
                            .build = LayerNormDx({6, 300}),
                            .modes = kBackendModes,
                            .gradients = false}},
               .bench = LayerNormDx({2048, 512}), .flags = kBackwardOnly);

// layer_norm_param_grad, LayerNorm's fused dgamma and dbeta, has a rule
// (layer_norm_grad and layer_norm), gradchecked in "header_example". Rows
// go in blocks of 16384 / D: "blocks" has 3 (54 rows each at D = 300).
DAGRAD_OP_CASE(layer_norm_param_grad,
               .configs = {{.name = "header_example", .build = LayerNormParamGradExample},
                           {.name = "blocks",
                            .build = LayerNormDParams({2, 70, 300}),
                            .modes = kBackendModes}},
               .bench = LayerNormDParams({2048, 512}));

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

Value Optional(const GoldenInputs& in, const char* name) {
  auto it = in.find(name);
  return it == in.end() ? Value() : it->second;
}

Value LayerNormOf(const GoldenInputs& in, const nlohmann::json& a) {
  return LayerNorm(in.at("x"), Optional(in, "gamma"), Optional(in, "beta"), a["eps"]);
}

}  // namespace

// layer_norm_grad and layer_norm_param_grad through the gradients. dx
// scales with 1/std: the constant row's is 1/sqrt(eps) ~ 316 times gy.
DAGRAD_GOLDENS("nn_ops",
               {"layer_norm_affine_3d", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
               {"layer_norm_plain", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
               {"layer_norm_gamma_only", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
               {"layer_norm_beta_only", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
               {"layer_norm_large_mean", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
               {"layer_norm_constant_row", GT(LayerNormOf(in, attrs), 1e-5, 1e-4)},
               {"layer_norm_float64", G(LayerNormOf(in, attrs))},
               {"layer_norm_wide_rows", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)});

DAGRAD_GOLDENS("edges",
               {"layer_norm_specials", G(LayerNormOf(in, attrs))});

}  // namespace dagrad::testing
