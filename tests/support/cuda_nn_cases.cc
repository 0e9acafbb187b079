// Cross-check cases of GELU's two forms (ops/gelu.h) and the sampling ops
// (ops/sampling.h): argmax and topk along every kind of axis in each
// numeric dtype, with ties; multinomial draws bit for bit, and the error of
// a row that is no distribution.

#include <cstdint>
#include <vector>

#include "ops/elementwise.h"
#include "ops/gelu.h"
#include "ops/sampling.h"
#include "tests/support/case_table.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {

void GeluAndSamplingCases(Cases& cs) {
  cs.Floats("gelu_tanh", [](CaseBuilder& b, DType d) {
    b.Out(Gelu(b.Input("x", d, {37, 129}, -6, 6), GeluApproximate::kTanh));
  });
  cs.Floats("gelu_grad_tanh_direct", [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {9, 33}, -4, 4), g = b.Input("g", d, {9, 33});
    b.Out(GeluGrad(x, g, GeluApproximate::kTanh));
  }, {.gradients = false});
  // Integers in [0, 4): ties everywhere, resolved alike.
  cs.Each("argmax_topk", kNumeric, [](CaseBuilder& b, DType d) {
    const Value x = b.Input("x", d, {5, 17, 3}, 0, 4);
    for (int64_t axis : {0, 1, -1}) {
      b.Out(ArgMax(x, axis));
      const TopKResult top = TopK(x, 3, axis);
      b.Out(top.values);
      b.Out(top.indices);
    }
    b.Out(TopK(x, 17, 1).indices);  // a full sort
  }, {.gradients = false, .exact = true});
  // Weights fed to both devices alike (a softmax computed on each could
  // differ in a last bit and move a draw across a boundary).
  cs.Floats("multinomial", [](CaseBuilder& b, DType d) {
    b.Out(Multinomial(b.Input("probs", d, {300, 50}, 0, 1), 7));
    b.Out(Multinomial(b.Input("weights", d, {4, 2, 1000}, 0, 5), 1ULL << 40));
  }, {.gradients = false, .exact = true});
  cs.Error("error_multinomial_row", [](CaseBuilder& b) {
    b.Out(Multinomial(b.Fixed("p", T<float>({3, 2}, {0.5, 0.5, 0, 0, 1, 2})), 1));
  });
}

}  // namespace dagrad::testing
