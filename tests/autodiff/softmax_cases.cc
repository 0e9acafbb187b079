// The op cases (tests/autodiff/support/op_case.h) of the softmax family,
// ops/softmax.cc: masked softmax, log_softmax and softmax's backward.

#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Second derivative helper: d/dx of sum(f(x) * w), as a value to check.
Value GradOf(Value loss, Value x) {
  auto grads = Gradients(loss, {x});
  return grads.ok() ? (*grads)[0] : loss.graph()->Error(grads.status());
}

// Every mask, alone and combined, broadcast in each way it can be.
void SoftmaxMasks(CaseBuilder& b, DType d) {
  const Value s = b.Input("s", d, {2, 3, 5, 6}, -3, 3);
  b.Out(Softmax(s));
  b.Out(MaskedSoftmax(s, {.keep = b.Input("keep", DType::kBool, {2, 1, 1, 6}, 0, 0.7)}, 0.5));
  b.Out(MaskedSoftmax(s, {.valid_lens = b.Input("lens", DType::kInt64, {2}, 0, 7)}));
  b.Out(MaskedSoftmax(s, {.valid_lens = b.Input("lens2", DType::kInt32, {2, 5}, 0, 7)}));
  b.Out(MaskedSoftmax(s, {.causal = true}));
  b.Out(MaskedSoftmax(s, {.causal = true, .causal_offset = 1}));
  b.Out(MaskedSoftmax(s, {.causal = true, .causal_offset = -2}));
  b.Out(MaskedSoftmax(s, {.bias = b.Input("bias", d, {5, 6}, -2, 2)}));
  b.Out(MaskedSoftmax(s, {.bias = b.Input("row_bias", d, {2, 3, 5, 1}, -2, 2)}));
  b.Out(MaskedSoftmax(s,
                      {.keep = b.Input("keep2", DType::kBool, {5, 6}, 0, 0.8),
                       .valid_lens = b.Input("lens3", DType::kInt64, {2}, 0, 7),
                       .bias = b.Input("bias2", d, {3, 1, 6}, -2, 2),
                       .causal = true},
                      0.3));
  b.Out(MaskedSoftmax(s, {.keep = b.Input("row_keep", DType::kBool, {2, 3, 5, 1}, 0, 0.5)}));
}

}  // namespace

DAGRAD_OP_CASE(
    softmax,
    .configs =
        {{.name = "plain",
          .build = Over({{"x", {2, 3, 5}, std::nullopt, -3.0, 3.0}},
                        [](Graph&, const In& in) { return Softmax(in[0]); })},
         {.name = "vector",
          .build = Over({{"x", {6}}}, [](Graph&, const In& in) { return Softmax(in[0]); })},
         // keep (B, 1, 1, K) broadcast over heads and queries; batch 1 keeps one key.
         {.name = "keep_broadcast_over_heads",
          .build =
              Over({{"scores", {2, 3, 2, 4}},
                    {"keep",
                     {2, 1, 1, 4},
                     T<bool>({2, 1, 1, 4}, {true, false, true, true, false, false, true, false})}},
                   [](Graph&, const In& in) { return MaskedSoftmax(in[0], {.keep = in[1]}); })},
         {.name = "valid_lens_1d",
          .build = Over({{"scores", {3, 2, 2, 5}}, {"lens", {3}, T<int64_t>({3}, {2, 5, 1})}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0], {.valid_lens = in[1]});
                        })},
         {.name = "valid_lens_2d",
          .build = Over(
              {{"scores", {2, 2, 3, 4}}, {"lens", {2, 3}, T<int32_t>({2, 3}, {1, 3, 4, 4, 2, 1})}},
              [](Graph&, const In& in) { return MaskedSoftmax(in[0], {.valid_lens = in[1]}); })},
         {.name = "causal",
          .build = Over({{"scores", {2, 4, 4}}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0], {.causal = true});
                        })},
         // Three new queries over five keys (two cached): offset S - T = 2.
         {.name = "causal_offset",
          .build = Over({{"scores", {2, 3, 5}}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0], {.causal = true, .causal_offset = 2});
                        })},
         {.name = "bias_broadcast",
          .build = Over({{"scores", {2, 3, 4}}, {"bias", {3, 4}}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0], {.bias = in[1]});
                        })},
         // A bias constant along the last axis (B, Q, 1) does not change the output;
         // its gradient is zero, which the finite differences confirm, and
         // rounding noise of the size of the scores' gradient on a backend.
         {.name = "bias_row_constant",
          .build = Over({{"scores", {2, 3, 4}}, {"bias", {2, 3, 1}}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0], {.bias = in[1]});
                        }),
          .cancelling = {{.input = "bias", .terms = "scores"}}},
         {.name = "scale",
          .build = Over({{"scores", {3, 5}}},
                        [](Graph&, const In& in) { return MaskedSoftmax(in[0], {}, 0.125); })},
         {.name = "all_masks_combined",
          .build = Over({{"scores", {2, 2, 3, 5}},
                         {"keep",
                          {2, 1, 1, 5},
                          T<bool>({2, 1, 1, 5},
                                  {true, true, false, true, true, true, false, true, true, true})},
                         {"lens", {2, 3}, T<int64_t>({2, 3}, {5, 4, 5, 3, 5, 2})},
                         {"bias", {2, 1, 3, 5}}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0],
                                               {.keep = in[1],
                                                .valid_lens = in[2],
                                                .bias = in[3],
                                                .causal = true,
                                                .causal_offset = 2},
                                               0.5);
                        })},
         // Rows masked entirely by keep (batch 0, query 1), by a zero valid length
         // (batch 1) and by causal with offset -1 (query 0): zeros, zero gradients.
         {.name = "fully_masked_rows",
          .build = Over({{"scores", {3, 3, 4}},
                         {"keep",
                          {3, 3, 1},
                          T<bool>({3, 3, 1},
                                  {true, false, true, true, true, true, true, true, true})},
                         {"lens", {3}, T<int64_t>({3}, {4, 0, 3})},
                         {"bias", {4}}},
                        [](Graph&, const In& in) {
                          return MaskedSoftmax(in[0], {.keep = in[1],
                                                       .valid_lens = in[2],
                                                       .bias = in[3],
                                                       .causal = true,
                                                       .causal_offset = -1});
                        })},
         // Second derivatives: d/dx and d/dw of d/dx sum(softmax(x) * w).
         {.name = "second_order",
          .build = Over({{"x", {3, 5}}, {"w", {3, 5}}},
                        [](Graph&, const In& in) {
                          return GradOf(Sum(Mul(MaskedSoftmax(in[0], {}, 0.7), in[1])), in[0]);
                        })},
         {.name = "second_order_masked",
          .build =
              Over({{"x", {2, 3, 4}}, {"w", {2, 3, 4}}, {"lens", {2}, T<int64_t>({2}, {3, 0})}},
                   [](Graph&, const In& in) {
                     Value y = MaskedSoftmax(in[0], {.valid_lens = in[2], .causal = true});
                     return GradOf(Sum(Mul(y, in[1])), in[0]);
                   })},
         {.name = "masks",
          .build = SoftmaxMasks,
          .modes = kBackendModes,
          .cancelling = {{.input = "row_bias", .terms = "s"}}},
         {.name = "long_rows",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(Softmax(b.Input("x", d, {3, 1000}, -5, 5)));
                b.Out(Softmax(b.Input("v", d, {7})));
              },
          .modes = kBackendModes},
         // Valid lengths past the keys fail alike on every backend.
         {.name = "valid_lens_error",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(MaskedSoftmax(
                    b.Input("s", d, {2, 3, 4}),
                    {.valid_lens = b.Fixed("lens", T<int64_t>({2, 3}, {1, 2, 3, 4, 5, -1}))}));
              },
          .dtypes = {DType::kFloat32},
          .modes = kBackendModes,
          .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(MaskedSoftmax(b.Input("s", d, {16, 8, 128, 128}, -3, 3), {.causal = true}));
    });

DAGRAD_OP_CASE(
    log_softmax,
    .configs = {{.name = "small",
                 .build = Over({{"x", {2, 3, 5}, std::nullopt, -4.0, 4.0}},
                               [](Graph&, const In& in) { return LogSoftmax(in[0]); })},
                {.name = "second_order",
                 .build = Over({{"x", {3, 4}}, {"w", {3, 4}}},
                               [](Graph&, const In& in) {
                                 return GradOf(Sum(Mul(LogSoftmax(in[0]), in[1])), in[0]);
                               })},
                {.name = "wide",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(LogSoftmax(b.Input("x", d, {4, 3, 9}, -4, 4)));
                       b.Out(LogSoftmax(b.Input("long", d, {3, 1000}, -5, 5)));
                     },
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(LogSoftmax(b.Input("x", d, {4096, 1000}, -5, 5)));
    });

DAGRAD_OP_CASE(
    softmax_grad,
    .configs = {{.name = "small",
                 .build = Over({{"y", {3, 4}, std::nullopt, 0.0, 1.0}, {"g", {3, 4}}},
                               [](Graph&, const In& in) { return SoftmaxGrad(in[0], in[1]); })},
                // Third derivative: softmax_grad's own rule, differentiated again.
                {.name = "third_order",
                 .build = Over({{"x", {2, 4}}, {"w", {2, 4}}},
                               [](Graph&, const In& in) {
                                 Value dx = GradOf(Sum(Mul(Softmax(in[0]), in[1])), in[0]);
                                 return GradOf(Sum(Mul(dx, in[1])), in[0]);
                               })},
                {.name = "direct",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(SoftmaxGrad(b.Input("y", d, {6, 11}, 0, 1), b.Input("g", d, {6, 11})));
                     },
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(SoftmaxGrad(b.Input("y", d, {16, 8, 128, 128}, 0, 1),
                        b.Input("g", d, {16, 8, 128, 128})));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

DAGRAD_GOLDENS("edges",
               {"softmax_specials_masked", G(MaskedSoftmax(in.at("x"), {.keep = in.at("keep")}))},
               {"log_softmax_specials", G(LogSoftmax(in.at("x")))});

}  // namespace dagrad::testing
