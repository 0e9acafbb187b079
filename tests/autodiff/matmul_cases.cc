// The op cases (tests/autodiff/support/op_case.h) of matmul and linear,
// ops/matmul.cc: every batching and transposition, small products (dagrad's
// own kernel) and large ones (BLIS), each in bfloat16 too (GemmBFloat16).

#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

const std::vector<DType> kFloatsAndBFloat16 = {DType::kFloat64, DType::kFloat32,
                                               DType::kBFloat16};

// Shapes is a config through one of the kernels' paths, bfloat16 included.
OpConfig Shapes(const char* name, Shape a, Shape b, MatMulOptions o = {}) {
  return {
      .name = name,
      .build = [a, b, o](CaseBuilder& cb,
                         DType d) { cb.Out(MatMul(cb.Input("a", d, a), cb.Input("b", d, b), o)); },
      .dtypes = kFloatsAndBFloat16,
      .modes = kBackendModes};
}

// BFloat16Output is a product rounded to bfloat16 (float32 for the other
// dtypes, which give only their own).
OpConfig BFloat16Output(const char* name, Shape a, Shape b, MatMulOptions o = {}) {
  return {.name = name,
          .build =
              [a, b, o](CaseBuilder& cb, DType d) {
                MatMulOptions with = o;
                if (d == DType::kBFloat16) with.output = DType::kBFloat16;
                cb.Out(MatMul(cb.Input("a", d, a), cb.Input("b", d, b), with));
              },
          .dtypes = {DType::kBFloat16},
          .modes = kBackendModes};
}

}  // namespace

DAGRAD_OP_CASE(
    matmul,
    .configs = {{.name = "small_plain",
                 .build = Over({{"a", {3, 4}}, {"b", {4, 2}}},
                               [](Graph&, const In& in) { return MatMul(in[0], in[1]); })},
                {.name = "small_transpose_a",
                 .build = Over({{"a", {4, 3}}, {"b", {4, 2}}},
                               [](Graph&, const In& in) {
                                 return MatMul(in[0], in[1], {.transpose_a = true});
                               })},
                {.name = "small_transpose_b",
                 .build = Over({{"a", {2, 3, 4}}, {"b", {2, 5, 4}}},
                               [](Graph&, const In& in) {
                                 return MatMul(in[0], in[1], {.transpose_b = true});
                               })},
                {.name = "small_transpose_both",
                 .build = Over({{"a", {2, 4, 3}}, {"b", {5, 4}}},
                               [](Graph&, const In& in) {
                                 return MatMul(in[0], in[1],
                                               {.transpose_a = true, .transpose_b = true});
                               })},
                {.name = "small_shared_rhs",
                 .build = Over({{"a", {2, 3, 3, 4}}, {"b", {4, 2}}},
                               [](Graph&, const In& in) { return MatMul(in[0], in[1]); })},
                {.name = "small_shared_lhs",
                 .build = Over({{"a", {3, 4}}, {"b", {2, 4, 2}}},
                               [](Graph&, const In& in) { return MatMul(in[0], in[1]); })},
                {.name = "small_batch_broadcast",
                 .build = Over({{"a", {2, 1, 3, 4}}, {"b", {1, 3, 4, 2}}},
                               [](Graph&, const In& in) { return MatMul(in[0], in[1]); })},
                // Second derivative: d/db of d/da sum((a·b)^2 * w).
                {.name = "second_order",
                 .build = Over({{"a", {3, 4}}, {"b", {4, 2}}, {"w", {3, 2}}},
                               [](Graph&, const In& in) {
                                 Value c = MatMul(in[0], in[1]);
                                 auto grads = Gradients(Sum(Mul(Mul(c, c), in[2])), {in[0]});
                                 return grads.ok() ? (*grads)[0] : c.graph()->Error(grads.status());
                               })},
                Shapes("plain", {5, 7}, {7, 3}),
                Shapes("transpose_a", {7, 5}, {7, 3}, {.transpose_a = true}),
                Shapes("transpose_b", {2, 5, 7}, {2, 3, 7}, {.transpose_b = true}),
                Shapes("transpose_both", {2, 7, 5}, {3, 7},
                       {.transpose_a = true, .transpose_b = true}),
                Shapes("batched_whole", {2, 3, 4, 5}, {2, 3, 5, 6}),
                Shapes("tall_shared_rhs", {2, 3, 4, 5}, {5, 6}),
                Shapes("shared_lhs", {4, 5}, {3, 5, 2}),
                Shapes("batch_broadcast", {2, 1, 3, 4}, {1, 3, 4, 2}),
                Shapes("batch_broadcast_transposed", {3, 1, 4, 3}, {2, 2, 4},
                       {.transpose_a = true, .transpose_b = true}),
                Shapes("empty_contraction", {3, 0}, {0, 4}),
                Shapes("large", {64, 128}, {128, 96}),
                BFloat16Output("bf16_output_tall", {2, 3, 4, 5}, {5, 6}),
                BFloat16Output("bf16_output_batched", {2, 7, 5}, {2, 3, 7},
                               {.transpose_a = true, .transpose_b = true})},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(MatMul(b.Input("a", d, {512, 512}), b.Input("b", d, {512, 512})));
    });

DAGRAD_OP_CASE(
    linear,
    .configs = {{.name = "bias_3d",
                 .build = Over({{"x", {2, 3, 4}}, {"w", {5, 4}}, {"b", {5}}},
                               [](Graph&, const In& in) { return Linear(in[0], in[1], in[2]); })},
                {.name = "no_bias",
                 .build = Over({{"x", {3, 4}}, {"w", {2, 4}}},
                               [](Graph&, const In& in) { return Linear(in[0], in[1]); })},
                // A 1-D x is one row, forward and backward (as torch's F.linear).
                {.name = "1d_input",
                 .build = Over({{"x", {4}}, {"w", {3, 4}}, {"b", {3}}},
                               [](Graph&, const In& in) { return Linear(in[0], in[1], in[2]); })},
                {.name = "1d_input_no_bias",
                 .build = Over({{"x", {5}}, {"w", {2, 5}}},
                               [](Graph&, const In& in) { return Linear(in[0], in[1]); })},
                // bfloat16 x and w give float32, with a float32 bias.
                {.name = "wide",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value x = b.Input("x", d, {2, 3, 40}), w = b.Input("w", d, {17, 40});
                       b.Out(Linear(x, w, b.Input("bias", GradientDType(d), {17})));
                       b.Out(Linear(x, w));
                     },
                 .dtypes = kFloatsAndBFloat16,
                 .modes = kBackendModes},
                // No gradients: linear's rule reshapes x to (-1, 0), which cannot
                // infer the -1 (a CPU-side limitation of the rule, not of the kernels).
                {.name = "zero_in_features",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(Linear(b.Input("x", d, {4, 0}), b.Input("w", d, {3, 0}),
                                    b.Input("b", d, {3})));
                     },
                 .modes = kBackendModes,
                 .gradients = false}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Linear(b.Input("x", d, {32, 64, 256}), b.Input("w", d, {512, 256}),
                   b.Input("bias", d, {512})));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

Value MatMulOf(const GoldenInputs& in, const nlohmann::json& a) {
  return MatMul(in.at("a"), in.at("b"),
                {.transpose_a = a["transpose_a"].get<bool>(),
                 .transpose_b = a["transpose_b"].get<bool>()});
}

}  // namespace

// Products of up to 5 terms: a few float32 ulps of 4.
DAGRAD_GOLDENS("basic_ops",
               {"matmul_plain", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_transpose_a", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_transpose_b", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_transpose_both", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_shared_rhs", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_shared_lhs", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_batch_broadcast", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
               {"matmul_float64", G(MatMulOf(in, attrs))},
               {"linear_bias",
                GT(Linear(in.at("input"), in.at("weight"), in.at("bias")), 1e-5, 2e-6)},
               {"linear_no_bias", GT(Linear(in.at("input"), in.at("weight")), 1e-5, 2e-6)});

DAGRAD_GOLDENS("edges",
               {"linear_1d_input",
                GT(Linear(in.at("input"), in.at("weight"), in.at("bias")), 1e-5, 2e-6)},
               {"linear_1d_input_no_bias",
                GT(Linear(in.at("input"), in.at("weight")), 1e-5, 2e-6)});

}  // namespace dagrad::testing
