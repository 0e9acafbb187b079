// The op cases (tests/autodiff/support/op_case.h) of gather and scatter_add,
// ops/gather.cc.

#include <vector>

#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/golden_registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Index tensors for inputs (fed as they are, not differentiated).
Tensor Int64s(const Shape& shape, const std::vector<int64_t>& v) {
  return *Tensor::FromVector<int64_t>(shape, v);
}
Tensor Int32s(const Shape& shape, const std::vector<int32_t>& v) {
  return *Tensor::FromVector<int32_t>(shape, v);
}

}  // namespace

DAGRAD_OP_CASE(
    gather,
    .configs = {{.name = "axis0_repeats",
                 .build = Over({{"params", {5, 3}}, {"idx", {5}, Int64s({5}, {4, 0, 4, 2, 4})}},
                               [](Graph&, const In& in) { return Gather(in[0], in[1]); })},
                {.name = "middle_axis_repeats",
                 .build = Over({{"params", {2, 5, 3}},
                                {"idx", {2, 3}, Int32s({2, 3}, {1, 3, 1, 0, 1, 4})}},
                               [](Graph&, const In& in) { return Gather(in[0], in[1], 1); })},
                {.name = "last_axis_negative",
                 .build = Over({{"params", {3, 4}}, {"idx", {3}, Int64s({3}, {3, 3, 0})}},
                               [](Graph&, const In& in) { return Gather(in[0], in[1], -1); })},
                {.name = "from_end",
                 .build = Over({{"params", {4, 3}}, {"idx", {5}, Int64s({5}, {-1, 0, -4, 3, -1})}},
                               [](Graph&, const In& in) { return GatherFromEnd(in[0], in[1]); })},
                {.name = "embedding_repeats",
                 .build = Over({{"table", {6, 4}},
                                {"ids", {2, 3}, Int64s({2, 3}, {1, 5, 1, 0, 1, 2})}},
                               [](Graph&, const In& in) { return Embedding(in[0], in[1]); })},
                {.name = "embedding_and_axes",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       const Value table = b.Input("table", d, {50, 33});
                       b.Out(Embedding(table, b.Input("ids", DType::kInt64, {4, 9}, 0, 50)));
                       b.Out(Gather(b.Input("p", d, {3, 6, 5}),
                                    b.Input("i32", DType::kInt32, {2, 7}, 0, 6), 1));
                       b.Out(Gather(b.Input("q", d, {3, 6, 5}),
                                    b.Input("last", DType::kInt64, {4}, 0, 5), -1));
                     },
                 .dtypes = kFloatsAndReduced,
                 .modes = kBackendModes},
                {.name = "ints_and_bools",
                 .build =
                     [](CaseBuilder& b, DType) {
                       const Value idx = b.Input("idx", DType::kInt64, {11}, 0, 8);
                       b.Out(Gather(b.Input("i", DType::kInt32, {8, 3}, -9, 9), idx));
                       b.Out(Gather(b.Input("m", DType::kBool, {2, 8}, 0, 0.5), idx, 1));
                     },
                 .dtypes = {DType::kInt32},
                 .modes = kBackendModes},
                // An index out of range fails alike on every backend.
                {.name = "index_error",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(Gather(b.Input("p", d, {4, 3}),
                                    b.Fixed("i", T<int32_t>({2, 3}, {0, 1, 7, 2, -1, 4}))));
                     },
                 .dtypes = {DType::kFloat32},
                 .modes = kBackendModes,
                 .expect_error = true},
                {.name = "from_end_index_error",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(GatherFromEnd(b.Input("p", d, {4, 3}),
                                           b.Fixed("i", T<int64_t>({3}, {-4, 3, -5}))));
                     },
                 .dtypes = {DType::kFloat32},
                 .modes = kBackendModes,
                 .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(Embedding(b.Input("table", d, {32000, 256}),
                      b.Input("ids", DType::kInt64, {64, 128}, 0, 32000)));
    });

DAGRAD_OP_CASE(
    scatter_add,
    .configs = {{.name = "middle_axis",
                 .build = Over({{"idx", {4}, Int64s({4}, {2, 0, 2, 2})}, {"updates", {3, 4, 2}}},
                               [](Graph&, const In& in) {
                                 return ScatterAdd(in[0], in[1], 3, 1);
                               })},
                // scatter_add as it appears in gather's gradient, checked through a second
                // derivative: d/d(params, w) of d/dparams sum(gather(params, idx, 1)^2 * w).
                {.name = "second_order",
                 .build = Over({{"params", {2, 5, 3}},
                                {"idx", {4}, Int64s({4}, {1, 3, 1, 1})},
                                {"w", {2, 4, 3}}},
                               [](Graph&, const In& in) {
                                 Value y = Gather(in[0], in[1], 1);
                                 auto grads = Gradients(Sum(Mul(Mul(y, y), in[2])), {in[0]});
                                 return grads.ok() ? (*grads)[0] : y.graph()->Error(grads.status());
                               })},
                {.name = "repeats",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(ScatterAdd(b.Input("idx", DType::kInt64, {500}, 0, 7),
                                        b.Input("u", d, {2, 500, 3}), 7, 1));
                       b.Out(ScatterAdd(b.Input("i32", DType::kInt32, {3, 4}, 0, 300),
                                        b.Input("v", d, {3, 4, 2}), 300));
                     },
                 .modes = kBackendModes},
                {.name = "index_error",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       b.Out(ScatterAdd(b.Fixed("i", T<int64_t>({3}, {0, 5, 9})),
                                        b.Input("u", d, {3}), 5));
                     },
                 .dtypes = {DType::kFloat64},
                 .modes = kBackendModes,
                 .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(ScatterAdd(b.Input("ids", DType::kInt64, {8192}, 0, 32000),
                       b.Input("u", d, {8192, 256}), 32000));
    });

// ---- PyTorch goldens (tests/autodiff/support/golden_registry.h): tools/goldens/basic_ops.py,
// nn_ops.py and edges.py (NaN, +-inf and signed zeros, values and gradients).

// scatter_add through the gradients.
DAGRAD_GOLDENS("nn_ops",
               {"gather_axis0_repeats",
                G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
               {"gather_middle_axis_int32",
                G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
               {"gather_last_axis_negative",
                G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
               {"gather_scalar_index", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
               {"gather_int64_params", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
               {"gather_matches_torch_gather",
                G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
               {"embedding", G(Embedding(in.at("table"), in.at("ids")))});

}  // namespace dagrad::testing
