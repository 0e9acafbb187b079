// tests/support/gradcheck.h
//
// The finite-difference oracle. A GradCase builds a graph from float64
// inputs (and may declare float64 parameters, as a composed subgraph does);
// GradCheck compares the gradients autodiff builds for every float64 input
// and parameter with central differences of the same graph:
//
//   2-point: (f(x+h) - f(x-h)) / 2h                      error O(h^2)
//   4-point: (f(x-2h) - 8f(x-h) + 8f(x+h) - f(x+2h)) / 12h  error O(h^4)
//
// The scalar checked is sum(y * R) for a fixed random R, so that every output
// element weighs differently (a plain sum would hide errors in ops whose
// outputs sum to a constant, such as softmax).
//
// Cases register themselves at static-initialisation time, so each op's test
// file declares its cases next to its other tests; gradcheck_test.cc runs
// them all, and a coverage test fails when a differentiable op is in no case.
//
//   DAGRAD_GRADCHECK(tanh_basic, {{"x", {3, 4}}},
//                    [](Graph& g, const std::vector<Value>& in) { return Tanh(in[0]); });

#ifndef DAGRAD_TESTS_SUPPORT_GRADCHECK_H_
#define DAGRAD_TESTS_SUPPORT_GRADCHECK_H_

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph.h"
#include "engine/tensor.h"

namespace dagrad::testing {

struct GradInput {
  std::string name;
  Shape shape;
  // Values; random uniform in [lo, hi) when absent. Integer or bool values
  // are fed as they are and not differentiated.
  std::optional<Tensor> value = std::nullopt;
  double lo = -1.0, hi = 1.0;
};

struct GradCheckOptions {
  double step = 1e-5;
  double rtol = 1e-6;
  double atol = 1e-7;
  bool four_point = true;  // else 2-point
  bool training = false;   // run in training mode (dropout active)
};

using GradBuilder = std::function<Value(Graph&, const std::vector<Value>&)>;

struct GradCase {
  std::string name;
  std::vector<GradInput> inputs;
  GradBuilder build;
  GradCheckOptions options;
};

// PrintTo names a case in test output.
inline void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

// GradCheck runs one case: OK, or a status naming the input, element,
// analytic and numeric values of the first mismatch.
absl::Status GradCheck(const GradCase& c, uint64_t seed);

// Registry of cases.
bool RegisterGradCase(GradCase c);
const std::vector<GradCase>& AllGradCases();

}  // namespace dagrad::testing

#define DAGRAD_GRADCHECK_CONCAT_INNER_(a, b) a##b
#define DAGRAD_GRADCHECK_CONCAT_(a, b) DAGRAD_GRADCHECK_CONCAT_INNER_(a, b)

// DAGRAD_GRADCHECK(name, inputs, builder[, options]) registers a case.
#define DAGRAD_GRADCHECK(case_name, ...)                                       \
  static const bool DAGRAD_GRADCHECK_CONCAT_(dagrad_gradcase_, case_name) =    \
      ::dagrad::testing::RegisterGradCase(                                     \
          ::dagrad::testing::GradCase{#case_name, __VA_ARGS__})

#endif  // DAGRAD_TESTS_SUPPORT_GRADCHECK_H_
