// The op cases (tests/autodiff/support/op_case.h) of cross_entropy and its fused
// backward, ops/loss.cc.

#include <utility>
#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using Options = CrossEntropyOptions;

const Tensor kRowTargets = T<int64_t>({5}, {2, -100, 0, 3, 1});

// Wide is a reduction's config on the backends: ignored targets (-1 here),
// 1000 classes, and every target ignored.
OpConfig Wide(const char* name, Options::Reduction r) {
  return {.name = name,
          .build =
              [r](CaseBuilder& b, DType d) {
                b.Out(CrossEntropy(b.Input("logits", d, {3, 5, 10}, -4, 4),
                                   b.Input("t", DType::kInt32, {3, 5}, -1, 10),
                                   {.ignore_index = -1, .reduction = r}));
                b.Out(CrossEntropy(b.Input("wide", d, {4, 1000}, -4, 4),
                                   b.Input("t64", DType::kInt64, {4}, 0, 1000), {.reduction = r}));
                b.Out(CrossEntropy(b.Input("ignored", d, {3, 4}),
                                   b.Fixed("all_ignored", T<int64_t>({3}, {-100, -100, -100})),
                                   {.reduction = r}));
              },
          .modes = kBackendModes};
}

}  // namespace

DAGRAD_OP_CASE(
    cross_entropy,
    .configs = {{.name = "mean_ignore",
                 .build = Over({{"logits", {5, 4}}, {"t", {5}, kRowTargets}},
                               [](Graph&, const In& in) { return CrossEntropy(in[0], in[1]); })},
                {.name = "sum",
                 .build = Over({{"logits", {5, 4}}, {"t", {5}, kRowTargets}},
                               [](Graph&, const In& in) {
                                 return CrossEntropy(in[0], in[1], {.reduction = Options::kSum});
                               })},
                {.name = "none",
                 .build = Over({{"logits", {5, 4}}, {"t", {5}, kRowTargets}},
                               [](Graph&, const In& in) {
                                 return CrossEntropy(in[0], in[1], {.reduction = Options::kNone});
                               })},
                {.name = "3d_int32_custom_ignore",
                 .build = Over({{"logits", {2, 3, 4}, std::nullopt, -3.0, 3.0},
                                {"t", {2, 3}, T<int32_t>({2, 3}, {1, 0, 3, 3, 3, 2})}},
                               [](Graph&, const In& in) {
                                 return CrossEntropy(in[0], in[1], {.ignore_index = 3});
                               })},
                {.name = "label_smoothing",
                 .build = Over({{"logits", {2, 3, 4}, std::nullopt, -3.0, 3.0},
                                {"t", {2, 3}, T<int64_t>({2, 3}, {1, -100, 3, 0, 2, 2})}},
                               [](Graph&, const In& in) {
                                 return CrossEntropy(in[0], in[1], {.label_smoothing = 0.2});
                               })},
                {.name = "all_ignored",
                 .build = Over({{"logits", {3, 4}},
                                {"t", {3}, T<int64_t>({3}, {-100, -100, -100})}},
                               [](Graph&, const In& in) { return CrossEntropy(in[0], in[1]); })},
                Wide("wide_mean", Options::kMean),
                Wide("wide_sum", Options::kSum),
                Wide("wide_none", Options::kNone),
                // A target past the classes fails alike on every backend.
                {.name = "target_error",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(CrossEntropy(b.Input("x", d, {2, 2, 3}),
                                          b.Fixed("t", T<int32_t>({2, 2}, {0, -100, 3, 1}))));
                     },
                 .dtypes = {DType::kFloat32},
                 .modes = kBackendModes,
                 .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(CrossEntropy(b.Input("logits", d, {4096, 1000}, -4, 4),
                         b.Input("t", DType::kInt64, {4096}, 0, 1000)));
    });

namespace {

// CrossEntropyDx is what autodiff builds for d/dlogits: cross_entropy_grad.
Value CrossEntropyDx(CaseBuilder& b, Value logits, Value targets) {
  auto dx = Gradients(CrossEntropy(logits, targets), {logits});
  return dx.ok() ? (*dx)[0] : b.graph().Error(dx.status());
}

}  // namespace

// cross_entropy_grad, cross-entropy's fused backward, has no rule of its
// own (a second derivative of the loss is out of scope).
DAGRAD_OP_CASE(
    cross_entropy_grad,
    .configs = {{.name = "dx",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(CrossEntropyDx(b, b.Input("x", d, {3, 5, 10}, -4, 4),
                                            b.Input("t", DType::kInt64, {3, 5}, 0, 10)));
                     },
                 .modes = kBackendModes,
                 .gradients = false},
                // Logits near 1000: exp(x - logsumexp) rounded to float32
                // would be off by 6e-5; exp(x - max) * (w / sum) is not.
                {.name = "dx_large_logits",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(CrossEntropyDx(b, b.Input("x", d, {4, 1000}, 996, 1004),
                                            b.Input("t", DType::kInt64, {4}, 0, 1000)));
                     },
                 .modes = kBackendModes,
                 .gradients = false},
                // A plan of the gradient alone: the backward op checks the
                // targets itself.
                {.name = "target_error",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(CrossEntropyDx(b, b.Input("x", d, {3, 4}),
                                            b.Fixed("t", T<int64_t>({3}, {1, 4, 0}))));
                     },
                 .dtypes = {DType::kFloat64},
                 .modes = kBackendModes,
                 .expect_error = true}},
    .bench =
        [](CaseBuilder& b, DType d) {
          b.Out(CrossEntropyDx(b, b.Input("logits", d, {4096, 1000}, -4, 4),
                               b.Input("t", DType::kInt64, {4096}, 0, 1000)));
        },
    .flags = kBackwardOnly);

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

Value CrossEntropyOf(const GoldenInputs& in, const nlohmann::json& a) {
  const std::string r = a["reduction"];
  return CrossEntropy(in.at("logits"), in.at("targets"),
                      {.reduction = r == "none" ? CrossEntropyOptions::kNone
                                                : CrossEntropyOptions::kMean});
}

}  // namespace

DAGRAD_GOLDENS("edges",
               {"cross_entropy_specials_none", G(CrossEntropyOf(in, attrs))},
               {"cross_entropy_neg_inf_logits", G(CrossEntropyOf(in, attrs))});

}  // namespace dagrad::testing
