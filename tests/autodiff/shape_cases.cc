// The op cases (tests/autodiff/support/op_case.h) of the shape ops,
// ops/shape_ops.cc: reshape, permute, broadcast_to, concat, slice and its
// gradient, unslice. Each "dtypes" config runs the 16-bit floats too.

#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

const std::vector<DType> kFloatsAndBool = {DType::kFloat32, DType::kFloat64, DType::kBool,
                                           DType::kBFloat16, DType::kFloat16};

}  // namespace

DAGRAD_OP_CASE(
    reshape,
    .configs = {{.name = "infer",
                 .build = Over({{"x", {2, 6}}},
                               [](Graph&, const In& in) {
                                 return Reshape(in[0], {3, -1, 2});
                               })},
                {.name = "dtypes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(Reshape(b.Input("x", d, {2, 3, 4, 5}, 0, 0.5), {6, -1}));
                     },
                 .dtypes = kFloatsAndBool,
                 .modes = kBackendModes}},
    .bench =
        [](CaseBuilder& b, DType d) {
          b.Out(Reshape(b.Input("x", d, {1024, 1024}), {512, -1}));
        },
    .flags = kAlwaysView);

// detach is reshape's twin without a gradient: the backends, every dtype.
DAGRAD_OP_CASE(
    detach,
    .configs = {{.name = "dtypes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(Detach(b.Input("x", d, {2, 3, 4, 5}, 0, 0.5)));
                     },
                 .dtypes = kFloatsAndBool,
                 .modes = kBackendModes,
                 .gradients = false}},
    .bench = [](CaseBuilder& b, DType d) { b.Out(Detach(b.Input("x", d, {1024, 1024}))); },
    .flags = kAlwaysView);

DAGRAD_OP_CASE(
    permute,
    .configs = {{.name = "4d",
                 .build = Over({{"x", {2, 3, 4, 5}}},
                               [](Graph&, const In& in) {
                                 return Permute(in[0], {0, 2, 3, 1});
                               })},
                {.name = "transpose_last_two",
                 .build = Over({{"x", {2, 3, 4}}},
                               [](Graph&, const In& in) { return Transpose(in[0], -1, -2); })},
                {.name = "dtypes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value x = b.Input("x", d, {2, 3, 4, 5}, 0, 0.5);
                       b.Out(Permute(x, {0, 2, 1, 3}));
                       b.Out(Permute(x, {3, 1, 0, 2}));
                       b.Out(Transpose(x, -1, -2));
                     },
                 .dtypes = kFloatsAndBool,
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Permute(b.Input("x", d, {16, 64, 32, 32}), {0, 2, 1, 3}));
    });

DAGRAD_OP_CASE(
    broadcast_to,
    .configs = {{.name = "small",
                 .build = Over({{"x", {3, 1}}},
                               [](Graph&, const In& in) {
                                 return BroadcastTo(in[0], Shape({2, 3, 4}));
                               })},
                {.name = "dtypes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(BroadcastTo(b.Input("x", d, {3, 1, 5}, -9, 9), Shape({2, 3, 4, 5})));
                     },
                 .dtypes = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kBFloat16,
                            DType::kFloat16},
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(BroadcastTo(b.Input("x", d, {1024}), Shape({1024, 1024})));
    });

DAGRAD_OP_CASE(
    concat,
    .configs = {{.name = "middle_axis",
                 .build = Over({{"a", {2, 1, 3}}, {"b", {2, 2, 3}}},
                               [](Graph&, const In& in) {
                                 return Concat({in[0], in[1], in[0]}, 1);
                               })},
                {.name = "dtypes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value a = b.Input("a", d, {2, 1, 3}, -9, 0.5);
                       const Value c = b.Input("c", d, {2, 4, 3}, -9, 0.5);
                       b.Out(Concat({a, c, a}, 1));
                       b.Out(Concat({c, c}, -1));
                       b.Out(Concat({a, a}, 0));
                     },
                 .dtypes = {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kBool,
                            DType::kBFloat16, DType::kFloat16},
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Concat({b.Input("a", d, {1024, 512}), b.Input("c", d, {1024, 512})}, -1));
    });

DAGRAD_OP_CASE(
    slice,
    .configs = {{.name = "step",
                 .build = Over({{"x", {3, 7}}},
                               [](Graph&, const In& in) { return Slice(in[0], -1, 1, 6, 2); })},
                {.name = "split_pieces_concatenated_gradient",
                 .build = Over({{"x", {5, 3}}},
                               [](Graph&, const std::vector<Value>& in) {
                                 Value a = Slice(in[0], 0, 0, 2), b = Slice(in[0], 0, 2, 5);
                                 return Concat({Tanh(b), a * a}, 0);
                               })},
                {.name = "dtypes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value x = b.Input("x", d, {3, 17, 4}, -9, 9);
                       b.Out(Slice(x, 1, 2, 15, 3));
                       b.Out(Slice(x, -1, -3, 100));
                       b.Out(Slice(x, 0, 1, 2));
                     },
                 .dtypes = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kBFloat16,
                            DType::kFloat16},
                 .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Slice(b.Input("x", d, {1024, 1024}), 1, 1, 1023, 2));
    });

// unslice has no builder of its own: it is slice's gradient.
DAGRAD_OP_CASE(
    unslice,
    .configs =
        {// unslice appears in the gradient of slice; check it through a second
         // derivative of sum(slice(x)^2 * w) with respect to w.
         {.name = "second_order",
          .build = Over({{"x", {4, 3}}, {"w", {2, 3}}},
                        [](Graph&, const In& in) {
                          Value s = Slice(in[0], 0, 1, 3);
                          auto grads = Gradients(Sum(Mul(Mul(s, s), in[1])), {in[0]});
                          return grads.ok() ? (*grads)[0] : s.graph()->Error(grads.status());
                        })},
         {.name = "slice_gradients",
          .build =
              [](CaseBuilder& b, DType d) {
                const Value x = b.Input("x", d, {3, 17, 4});
                b.Out(Slice(x, 1, 2, 15, 3));
                b.Out(Slice(x, -1, 1, 3));
              },
          .modes = kBackendModes}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Slice(b.Input("x", d, {1024, 1024}), 1, 1, 1023, 2));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

namespace {

Value SliceOf(const GoldenInputs& in, const nlohmann::json& a) {
  return Slice(in.at("x"), a["axis"], a["start"], a["end"], a["step"]);
}

}  // namespace

// unslice through slice's gradient.
DAGRAD_GOLDENS("basic_ops",
               {"reshape_infer", G(Reshape(in.at("x"), GoldenInts(attrs["shape"])))},
               {"permute_4d", G(Permute(in.at("x"), GoldenInts(attrs["perm"])))},
               {"permute_int64", G(Permute(in.at("x"), GoldenInts(attrs["perm"])))},
               {"broadcast_to", G(BroadcastTo(in.at("x"), Shape(GoldenInts(attrs["shape"]))))},
               {"concat_middle_axis",
                G(Concat({in.at("a"), in.at("b"), in.at("a")}, attrs["axis"]))},
               {"concat_bool_first_axis", G(Concat({in.at("a"), in.at("b")}, attrs["axis"]))},
               {"slice_step", G(SliceOf(in, attrs))},
               {"slice_negative_start_clamped_end", G(SliceOf(in, attrs))},
               {"slice_middle_axis_step3", G(SliceOf(in, attrs))},
               {"detach_product", G(in.at("x") * Detach(in.at("x")))});

}  // namespace dagrad::testing
