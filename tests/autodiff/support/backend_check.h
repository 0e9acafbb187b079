// tests/autodiff/support/backend_check.h
//
// The backend cross-check oracle: a CrossCase builds a small graph from
// random inputs; CrossCheck runs it on the CPU and on another device with
// the same feeds, both with their arenas poisoned with NaN before each run,
// and compares every output and every gradient (of sum(y * R) for a fixed
// random R, with respect to every float input) between the two.
//
//   CrossCase c{"softmax_causal", [](CaseBuilder& b) {
//     b.Out(MaskedSoftmax(b.Float("x", {2, 4, 4}), {.causal = true}));
//   }};
//   ASSERT_OK(CrossCheck(c, [] { return CudaDevice(); }));
//
// Comparison: integer and bool tensors, and any case marked exact, must be
// bit-identical (signed zeros included), except that a NaN matches any
// NaN: payloads and signs of NaNs differ between x86 and CUDA, whose
// arithmetic gives one canonical NaN. Other float tensors must have NaNs
// (and infinities) in the same places and max |other - cpu| <= rtol *
// max |cpu|, rtol DefaultRtol (1e-5 for float32, 1e-10 for float64, one
// ulp of the largest value for bfloat16 and float16, whose outputs are
// rounded sums that two backends may round either way) unless the case
// says otherwise. A case marked expect_error must fail on both devices
// with the same code and message.
//
// A gradient that is zero in exact arithmetic (a bias constant along a
// softmax row, which the softmax ignores) is a sum of terms that cancel, and
// each backend returns rounding noise of the size of those terms. Its own
// max |cpu| is that noise, so dividing by it compares noise with noise: the
// case names it in `cancelling`, and it is compared with the magnitude of
// the terms (max |cpu| of the gradient they come from) as its scale.

#ifndef DAGRAD_TESTS_SUPPORT_BACKEND_CHECK_H_
#define DAGRAD_TESTS_SUPPORT_BACKEND_CHECK_H_

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/tensor.h"

namespace dagrad::testing {

// CaseBuilder declares a case's inputs (with how to draw their values) and
// its outputs.
class CaseBuilder {
 public:
  explicit CaseBuilder(Graph& g) : g_(g) {}

  Graph& graph() { return g_; }
  // Input of `dtype`, drawn uniformly: floats in [lo, hi), integers in
  // [lo, hi) (whole numbers), bools true with probability hi (lo unused).
  Value Input(const std::string& name, DType dtype, const Shape& shape, double lo = -1.0,
              double hi = 1.0);
  // Float is a float32 input in [lo, hi); Float64 a float64 one.
  Value Float(const std::string& name, const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return Input(name, DType::kFloat32, shape, lo, hi);
  }
  // Fixed is an input always fed `value`.
  Value Fixed(const std::string& name, const Tensor& value);
  // Out adds an output to compare.
  void Out(Value v) { outputs_.push_back(v); }
  // NoGrad marks an input as one no gradient is taken with respect to
  // (finite differences are meaningless there, or the op takes none).
  void NoGrad(const Value& input);

  // Feeds draws every input's value for the run numbered `seed`.
  Feeds MakeFeeds(uint64_t seed) const;
  const std::vector<Value>& outputs() const { return outputs_; }
  // Inputs that are float and not marked NoGrad (what gradients are taken
  // with respect to).
  std::vector<Value> FloatInputs() const;

 private:
  struct Spec {
    Value value;
    double lo, hi;
    std::optional<Tensor> fixed;
    bool differentiable = true;
  };
  Graph& g_;
  std::vector<Spec> inputs_;
  std::vector<Value> outputs_;
};

// CancellingGradient: the gradient wrt input `input` is a sum of terms of
// the gradient wrt input `terms` that cancel exactly (CrossCase::cancelling).
//   {.input = "bias", .terms = "scores"}   // bias (B, Q, 1) beside scores (B, Q, K)
struct CancellingGradient {
  std::string input;
  std::string terms;
};

struct CrossCase {
  std::string name;
  std::function<void(CaseBuilder&)> build;
  bool gradients = true;     // also compare gradients wrt float inputs
  bool training = false;     // run in training mode (dropout active)
  bool fold_constants = true;  // false: fill/arange run as kernels
  double rtol = 0;           // 0: DefaultRtol of each tensor's dtype
  bool exact = false;        // every tensor bit for bit
  bool expect_error = false;  // both devices fail the same way
  int runs = 2;              // runs with fresh inputs, on the same plans
  std::vector<CancellingGradient> cancelling = {};  // gradients zero in exact arithmetic
};

// PrintTo names the case in test output (gtest's value printer).
inline void PrintTo(const CrossCase& c, std::ostream* os) { *os << c.name; }

// BuiltCase is a case's graph with what to fetch.
struct BuiltCase {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<CaseBuilder> builder;
  std::vector<Value> fetches;
  std::vector<std::string> names;  // of each fetch, for messages
  std::vector<std::string> wrt;    // of each fetch: the input a gradient is wrt; "" for outputs
};

// BuildCase builds the graph, the gradient nodes and the fetch list.
absl::StatusOr<BuiltCase> BuildCase(const CrossCase& c);

using DeviceFactory = std::function<absl::StatusOr<std::unique_ptr<Device>>()>;

// CrossCheck runs `c` on the CPU and on a device from `factory` and
// compares; OK, or a status describing the first disagreement.
absl::Status CrossCheck(const CrossCase& c, const DeviceFactory& factory);

// DefaultRtol is the tolerance of a dtype's comparisons (see the top).
double DefaultRtol(DType d);

// CompareTensors returns OK when `other` matches `cpu` as described above:
// max |other - cpu| <= rtol * max(max |cpu|, min_scale).
absl::Status CompareTensors(const Tensor& cpu, const Tensor& other, double rtol, bool exact,
                            double min_scale = 0);

// CompareFetches compares one run's fetches of `b` (`want` from the CPU or
// the baseline, `got` from the other side) with CompareTensors, each with
// the case's tolerance and a cancelling gradient with its terms' scale.
// The status names the first fetch that differs.
absl::Status CompareFetches(const CrossCase& c, const BuiltCase& b, absl::Span<const Tensor> want,
                            absl::Span<const Tensor> got);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_BACKEND_CHECK_H_
