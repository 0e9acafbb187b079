// tests/autodiff/support/gradcheck.h
//
// The finite-difference oracle. GradCheck builds a float64 graph on a
// CaseBuilder (tests/autodiff/support/backend_check.h; the graph may declare float64
// parameters, as a composed subgraph does) and compares the gradients
// autodiff builds for every float64 input and parameter with central
// differences of the same graph:
//
//   2-point: (f(x+h) - f(x-h)) / 2h                      error O(h^2)
//   4-point: (f(x-2h) - 8f(x-h) + 8f(x+h) - f(x+2h)) / 12h  error O(h^4)
//
// The scalar checked is the sum over the float outputs y of sum(y * R), for
// a fixed random R per output, so that every output element weighs
// differently (a plain sum would hide errors in ops whose outputs sum to a
// constant, such as softmax).
//
// Op cases (tests/autodiff/support/op_case.h) run it in their gradcheck mode:
//
//   ASSERT_OK(GradCheck([](CaseBuilder& b) { b.Out(Tanh(b.Input("x", DType::kFloat64, {3, 4}))); },
//                       {}, /*training=*/false, /*seed=*/7));

#ifndef DAGRAD_TESTS_SUPPORT_GRADCHECK_H_
#define DAGRAD_TESTS_SUPPORT_GRADCHECK_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "tests/autodiff/support/backend_check.h"

namespace dagrad::testing {

struct GradCheckOptions {
  double step = 1e-5;
  double rtol = 1e-6;
  double atol = 1e-7;
  bool four_point = true;  // else 2-point
};

// GradCheck runs the graph `build` declares, in training mode (dropout
// active) when `training`, with inputs drawn for `seed`: OK, or a status
// naming the input, element, analytic and numeric values of the first
// mismatch. Inputs marked NoGrad, and integer or bool ones, are fed as
// drawn and not differentiated.
absl::Status GradCheck(const std::function<void(CaseBuilder&)>& build,
                       const GradCheckOptions& options, bool training, uint64_t seed);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_GRADCHECK_H_
