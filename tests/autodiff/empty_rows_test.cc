// Tensors with no elements but many rows, (2^40, 0) and kin: every op and
// its gradient runs at once, as PyTorch's do. Softmax, log_softmax and
// concat visited each of the 2^40 rows (years of empty loops), so a graph
// that was fine to build and compile hung in Run.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cumsum.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

struct EmptyCase {
  std::string name;
  std::function<Value(Value x)> op;  // x: float32 (2^20, 2^20, 0), 2^40 empty rows
  // log_softmax's gradient sums each row: (2^20, 2^20, 1), 4.4 TB, which
  // the planner refuses (ResourceExhausted, naming the sum), as it should.
  bool gradient = true;
};

TEST(EmptyRows, EveryOpAndGradientRunsAtOnce) {
  const std::vector<EmptyCase> cases = {
      {"softmax", [](Value x) { return Softmax(x); }},
      {"log_softmax", [](Value x) { return LogSoftmax(x); }, /*gradient=*/false},
      {"masked_softmax", [](Value x) { return MaskedSoftmax(x, {.causal = true}, 0.5); }},
      {"concat", [](Value x) { return Concat({x, x}, 2); }},
      {"concat_axis_0", [](Value x) { return Concat({x, x}, 0); }},
      {"slice", [](Value x) { return Slice(x, 1, 1, 5); }},
      {"transpose", [](Value x) { return Transpose(x, 0, 1); }},
      {"layer_norm", [](Value x) { return LayerNorm(x, Value(), Value()); }},
      {"cumsum", [](Value x) { return CumSum(x, 2); }},
      {"gelu", [](Value x) { return Gelu(x); }},
      {"dropout", [](Value x) { return Dropout(x, 0.5); }},
      {"where", [](Value x) { return Where(Greater(x, Exp(x)), x, -x); }},
      {"attention", [](Value x) { return Attention(x, x, x, {.causal = true}); }},
  };
  for (const EmptyCase& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g;
    Value x = g.Input("x", DType::kFloat32, {int64_t{1} << 20, int64_t{1} << 20, 0});
    Value y = c.op(x);
    ASSERT_OK(y.status());
    std::vector<Value> fetches = {y};
    if (c.gradient) {
      ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(y), {x}));
      fetches.push_back(grads[0]);
    }
    ASSERT_OK_AND_ASSIGN(Tensor empty, Tensor::Zeros(DType::kFloat32, x.shape()));
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, fetches, {{x, empty}}));
    EXPECT_EQ(out[0].num_elements(), 0);
    if (c.gradient) EXPECT_EQ(out[1].shape(), x.shape());
  }
}

}  // namespace
}  // namespace dagrad::testing
