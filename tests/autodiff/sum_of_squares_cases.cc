// The op case (tests/autodiff/support/op_case.h) of ops/sum_of_squares.cc: inputs of
// several shapes and of both float dtypes, through chunk boundaries and
// batches of CUDA launches. Exact: every backend adds in the order of
// ops/math/sum_of_squares_math.h.

#include <string>
#include <vector>

#include "ops/elementwise.h"
#include "ops/sum_of_squares.h"
#include "tests/autodiff/support/op_case.h"

namespace dagrad::testing {
namespace {

// The file comment's example: a norm over three gradients.
void Norm(CaseBuilder& b, DType d) {
  Value dw1 = b.Input("dw1", d, {3, 4});
  Value db1 = b.Input("db1", d, {5}, -3, 3);
  Value dw2 = b.Input("dw2", d, {2, 1, 3});
  Value norm = Sqrt(SumOfSquares({dw1, db1, dw2}));   // () float64
  b.Out(norm);
}

// The declaration's example: dtypes mixed in one op.
void Mixed(CaseBuilder& cb, DType) {
  Value w = cb.Input("w", DType::kFloat32, {2, 3});
  Value v = cb.Input("v", DType::kFloat64, {4});
  Value sq = SumOfSquares({w, v});   // w (2, 3) float32, v (4,) float64 -> ()
  cb.Out(sq);
}

// Chunks: one of exactly three chunks, one a chunk and an element, one
// empty, a scalar.
void Chunks(CaseBuilder& b, DType d) {
  b.Out(SumOfSquares({b.Input("a", d, {70000}, -3, 3), b.Input("b", d, {3, 65536}),
                      b.Input("e", d, {0, 4}), b.Input("s", d, {}),
                      b.Input("c", d, {65537}, -100, 100)}));
}

// More inputs than one CUDA launch takes (three launches), in shapes that
// cycle.
void ManyInputs(CaseBuilder& b, DType d) {
  std::vector<Value> xs;
  for (int i = 0; i < 100; ++i) xs.push_back(b.Input("x" + std::to_string(i), d, {i % 7 + 1, 3}));
  b.Out(SumOfSquares(xs));
}

}  // namespace

DAGRAD_OP_CASE(sum_of_squares,
               .configs = {{.name = "norm", .build = Norm, .exact = true},
                           {.name = "mixed_dtypes",
                            .build = Mixed,
                            .dtypes = {DType::kFloat64},
                            .modes = kBackendModes,
                            .exact = true},
                           {.name = "chunks", .build = Chunks, .modes = kBackendModes,
                            .exact = true},
                           {.name = "many_inputs", .build = ManyInputs, .modes = kBackendModes,
                            .exact = true}},
               .bench = [](CaseBuilder& b, DType d) {
                 std::vector<Value> xs;
                 for (int i = 0; i < 16; ++i) {
                   xs.push_back(b.Input("w" + std::to_string(i), d, {256, 256}));
                   xs.push_back(b.Input("b" + std::to_string(i), d, {256}));
                 }
                 b.Out(SumOfSquares(xs));
               });

}  // namespace dagrad::testing
