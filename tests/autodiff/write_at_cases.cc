// The op case (tests/autodiff/support/op_case.h) of write_at, ops/write_at.cc:
// the variable it writes, over several runs, along an inner and the first
// axis, from a value that is a view; a start past the end, fed or
// computed, fails alike everywhere, writing nothing.

#include "ops/write_at.h"

#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

void Cache(CaseBuilder& b, DType d) {
  Graph& g = b.graph();
  const Value keys = g.Variable("keys", {2, 3, 7, 5}, Initializer::Normal(0, 1), d);
  b.Out(WriteAt(keys, b.Input("fresh", d, {2, 3, 2, 5}),
                b.Fixed("at", *Tensor::FromVector<int64_t>({1}, {4})), 2));
  b.Out(keys);
  const Value rows = g.Variable("rows", {6, 4}, Initializer::Normal(0, 1), d);
  b.Out(WriteAt(rows, b.Input("row", d, {1, 4}),
                b.Fixed("first", Tensor::Scalar<int64_t>(0)), 0));
  b.Out(rows);
}

// The value is a slice of a fed input, a view one element (2 bytes in a
// 16-bit dtype) into it: rows of whole 4-byte words that start off a word.
void ValueAView(CaseBuilder& b, DType d) {
  const Value cache = b.graph().Variable("cache", {1, 3, 4}, Initializer::Normal(0, 1), d);
  b.Out(WriteAt(cache, Slice(b.Input("x", d, {1, 1, 6}), 2, 1, 5),
                b.Fixed("at", Tensor::Scalar<int64_t>(1)), 1));
  b.Out(cache);
}

// The value is a view of the variable written: a cache shifted right and
// one shifted left by a row, read whole before the write as memmove reads
// it (CUDA's threads raced: one read words another had written).
void ShiftOfItself(CaseBuilder& b, DType d) {
  Graph& g = b.graph();
  const Value right = g.Variable("right", {1024}, Initializer::Normal(0, 1), d);
  b.Out(WriteAt(right, Slice(right, 0, 0, 1023), b.Fixed("one", Tensor::Scalar<int64_t>(1)), 0));
  b.Out(right);
  const Value left = g.Variable("left", {300, 7}, Initializer::Normal(0, 1), d);
  b.Out(WriteAt(left, Slice(left, 0, 1, 300), b.Fixed("zero", Tensor::Scalar<int64_t>(0)), 0));
  b.Out(left);
}

// A start the host cannot check: computed (2 + 1) by an op of the plan.
void ComputedStartPastTheEnd(CaseBuilder& b, DType d) {
  const Value v = b.graph().Variable("v", {4, 3}, Initializer::Ones(), d);
  const Value at = Add(b.Fixed("two", Tensor::Scalar<int64_t>(2)),
                       b.Fixed("one", Tensor::Scalar<int64_t>(1)));
  b.Out(WriteAt(v, b.Input("x", d, {2, 3}), at, 0));
}

}  // namespace

DAGRAD_OP_CASE(
    write_at,
    .configs = {{.name = "cache", .build = Cache, .dtypes = kFloatsAndReduced,
                 .modes = kBackendModes, .gradients = false, .runs = 2},
                {.name = "start_past_the_end",
                 .build =
                     [](CaseBuilder& b, DType d) {
                       Graph& g = b.graph();
                       const Value v = g.Variable("v", {4, 3}, Initializer::Ones(), d);
                       b.Out(WriteAt(v, b.Input("x", d, {2, 3}),
                                     b.Fixed("at", Tensor::Scalar<int64_t>(3)), 0));
                     },
                 .dtypes = {DType::kFloat32},
                 .modes = kBackendModes,
                 .expect_error = true},
                {.name = "value_a_view", .build = ValueAView, .dtypes = kFloatsAndReduced,
                 .modes = kBackendModes, .gradients = false, .runs = 2},
                {.name = "shift_of_itself", .build = ShiftOfItself, .dtypes = kFloatsAndReduced,
                 .modes = kBackendModes, .gradients = false, .runs = 2},
                {.name = "computed_start_past_the_end",
                 .build = ComputedStartPastTheEnd,
                 .dtypes = {DType::kFloat32},
                 .modes = kBackendModes,
                 .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      const Value cache = b.graph().Variable("cache", {1, 12, 1023, 64}, Initializer::Zeros(), d);
      b.Out(WriteAt(cache, b.Input("fresh", d, {1, 12, 1, 64}),
                    b.Fixed("at", Tensor::Scalar<int64_t>(500)), 2));
    });

}  // namespace dagrad::testing
