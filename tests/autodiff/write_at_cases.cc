// The op case (tests/autodiff/support/op_case.h) of write_at, ops/write_at.cc:
// the variable it writes, over several runs, along an inner and the first
// axis; a start past the end fails alike everywhere, writing nothing.

#include "ops/write_at.h"
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
                 .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      const Value cache = b.graph().Variable("cache", {1, 12, 1023, 64}, Initializer::Zeros(), d);
      b.Out(WriteAt(cache, b.Input("fresh", d, {1, 12, 1, 64}),
                    b.Fixed("at", Tensor::Scalar<int64_t>(500)), 2));
    });

}  // namespace dagrad::testing
