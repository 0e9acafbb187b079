// tests/autodiff/support/op_case.h
//
// OpCase: one test case per op, registered once beside the op's family of
// tests, run in every mode:
//   gradcheck  float64 finite differences (tests/autodiff/support/gradcheck.h);
//   cuda       CPU against CUDA, in each dtype (tests/autodiff/support/backend_check.h;
//              skipped, saying why, without a GPU);
//   isa        each CPU kernel level this machine runs against the baseline
//              (ops/cpu/internal/cpu_isa.h; tests/autodiff/support/isa_check.h);
//   reduced    in each 16-bit float of its dtypes (bfloat16, float16)
//              against float32 fed the same values, within a few ulps of
//              the 16-bit format (tests/autodiff/support/reduced_check.h); the cuda
//              and isa modes run those dtypes too, the gradcheck stays in
//              float64;
//   timing     `dagrad_bench --op=NAME` times the case forward and forward
//              + backward at its benchmark size; it prints, never asserts.
// tests/autodiff/op_case_test.cc runs all but timing; OpCaseCoverage fails when an
// op of AllOps() (ops/registry.h) has no case or more than one, when its
// case never runs it, or when it takes a 16-bit float
// (OpDef::reduced_floats) that no config runs it in; `dagrad_bench
// --op_coverage` prints the table.
//
// Adding an op to an existing family (the checklist; CONTRIBUTING.md has
// it in full):
//   1. ops/elementwise.h (an elementwise op): its declaration and example,
//      its functor and its line of the family's list, which gives it its
//      CUDA kernel; another family's op declares itself in its header and
//      adds its CUDA kernel to ops/cuda/<family>.cu (DAGRAD_CUDA_KERNEL).
//   2. ops/<family>.cc: the op in one place — shape inference, CPU kernel,
//      gradient rule, OpDef (with its ONNX form, .onnx) registered with
//      DAGRAD_REGISTER_OP (the family's macro does it), builder.
//   3. tests/<family>_cases.cc: its case, one macro; for a unary op
//        DAGRAD_OP_CASE(softplus, UnaryCase(Softplus, -3, 3));
//      for a binary one
//        DAGRAD_OP_CASE(minimum, BinaryCase(Minimum));
//      and for anything else a list of configs (below); a config may hold
//      the header's example line for line (softplus's and atan2's do).
//   That is all on the test side: no central list of cases, no hand-kept
//   list of backward-only or view ops (the case's `flags` say so), and the
//   coverage test names any op left without a case. `ctest -R OpCase` runs
//   the case in every mode, `dagrad_bench --op=NAME` times it; the op's own
//   behaviour tests (hand-worked values, errors) stay in
//   tests/<family>_test.cc; its PyTorch goldens' builders go in its case
//   file too (DAGRAD_GOLDENS, tests/autodiff/support/golden_registry.h).
//
// Which flags, which fields:
//   - An op with integer or bool outputs (comparisons, an argmax, top-k
//     indices, multinomial samples): flags = kIntegerOutput, its configs
//     .modes = kBackendModes (nothing to gradcheck), integer dtypes in
//     .dtypes where the op takes them.
//   - An op that draws random numbers: .training = true where it draws
//     only in training, and .exact = true, since every backend and level
//     must draw the same bits (dropout's case).
//   - A backward kernel without a rule of its own: flags = kBackwardOnly,
//     a config that builds it as autodiff does (layer_norm_grad's case).
//   - A layer of several ops (models/, nn layers): flags = kComposite, named
//     after the layer; configs with float64 weights set .dtypes = {DType::kFloat64}.
//   - A new option of an existing op (an approximation, a mode): a config
//     of that op's case, e.g. With(UnaryCase(...), {{.name = "tanh", ...}}).
//   - A config whose inputs are drawn outside the op's domain: draw them
//     inside it (lo, hi); an input no gradient is taken in: b.NoGrad(x).
//   - A config that must fail alike everywhere: .expect_error = true.
//   - An op that takes bfloat16 or float16 (OpDef::reduced_floats): a
//     config with those dtypes in .dtypes, e.g. kFloatsAndReduced, built
//     as the op would be used in mixed precision (a product's operands
//     in d, its bias in float32).
//   - Sizes: gradcheck configs small (every element is perturbed 4 times),
//     backend configs through each kernel path, `bench` realistic.

// A case is a list of configs; each config is a builder that declares its
// inputs (shape, dtype, the range values are drawn from: a positive-only
// domain is lo > 0) and outputs on a CaseBuilder, for the dtype it is run
// in, with the modes, dtypes and tolerances it runs under:
//
//   DAGRAD_OP_CASE(add,
//       .configs = {{.name = "broadcast",
//                    .build = [](CaseBuilder& b, DType d) {
//                      b.Out(Add(b.Input("a", d, {2, 3, 4}), b.Input("b", d, {3, 1})));
//                    },
//                    .dtypes = kNumeric}},
//       .bench = [](CaseBuilder& b, DType d) {
//         b.Out(Add(b.Input("a", d, {1024, 1024}), b.Input("b", d, {1024})));
//       });
//
// Over() adapts a builder written over declared inputs, as tinygrad's
// helper_test_op does:
//
//   {.name = "positive", .build = Over({{"x", {3, 2}, std::nullopt, 0.5, 2.0}},
//                                      [](Graph&, const In& in) { return Log(in[0]); })}

#ifndef DAGRAD_TESTS_SUPPORT_OP_CASE_H_
#define DAGRAD_TESTS_SUPPORT_OP_CASE_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/tensor.h"
#include "tests/autodiff/support/backend_check.h"
#include "tests/autodiff/support/gradcheck.h"

namespace dagrad::testing {

// CaseBuild declares a config's inputs and outputs in dtype `d`.
using CaseBuild = std::function<void(CaseBuilder& b, DType d)>;

// The modes a config runs in (timing runs the case's bench builder).
enum OpMode : uint32_t {
  kGradcheckMode = 1u << 0,  // in float64, when the config's dtypes have it
  kCudaMode = 1u << 1,       // in each of the config's dtypes
  kIsaMode = 1u << 2,        // in each of the config's dtypes
  kReducedMode = 1u << 3,    // in each of its 16-bit dtypes, against float32
  kBackendModes = kCudaMode | kIsaMode | kReducedMode,  // all but the gradcheck
  kEveryMode = kGradcheckMode | kBackendModes,
};

inline const std::vector<DType> kFloats = {DType::kFloat64, DType::kFloat32};
// kFloatsAndReduced adds the 16-bit floats: for the ops that take them.
inline const std::vector<DType> kFloatsAndReduced = {DType::kFloat64, DType::kFloat32,
                                                     DType::kBFloat16, DType::kFloat16};
inline const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                            DType::kInt64};

struct OpConfig {
  std::string name;  // names the config's tests (ConfigTestName)
  CaseBuild build;
  std::vector<DType> dtypes = kFloats;
  uint32_t modes = kEveryMode;
  GradCheckOptions gradcheck = {};  // finite-difference step and tolerances
  // cuda and isa: max |other - cpu| <= rtol * max |cpu|; 0: DefaultRtol
  // (backend_check.h) of each tensor's dtype, or of the run's dtype for a
  // 16-bit run. exact: every tensor bit for bit.
  double rtol = 0;
  bool exact = false;
  // reduced: the tolerance in ulps of the 16-bit format; 0: kReducedUlps
  // (tests/autodiff/support/reduced_check.h).
  double reduced_ulps = 0;
  bool gradients = true;       // cuda and isa also compare the gradients
  bool training = false;       // every mode runs in training mode (dropout)
  bool fold_constants = true;  // false: fill and arange run as kernels
  bool expect_error = false;   // cuda and isa: both fail alike; no gradients
  int runs = 2;                // cuda and isa: runs with fresh inputs
  // cuda and isa: gradients that are zero in exact arithmetic, compared
  // with the scale of the terms that cancel (backend_check.h).
  std::vector<CancellingGradient> cancelling = {};
};

// Facts about a case's op that change which modes apply.
enum OpCaseFlag : uint32_t {
  // A backward kernel without a gradient rule of its own (differentiable,
  // grad null in its OpDef): no gradcheck of its own (its forward op's
  // gradcheck covers it); a derivative through it is Unimplemented.
  kBackwardOnly = 1u << 0,
  // The executor aliases input 0 on every device: no kernel runs, and no
  // CUDA kernel exists.
  kAlwaysView = 1u << 1,
  // Integer or bool outputs: nothing to differentiate; timed forward only.
  kIntegerOutput = 1u << 2,
  // A subgraph of several ops (a layer), named by no OpDef.
  kComposite = 1u << 3,
};

struct OpCase {
  std::string op;  // the OpDef's name (set by DAGRAD_OP_CASE)
  std::vector<OpConfig> configs;
  // Timing: the graph at benchmark size, built in float32. Empty: the
  // first config's builder at its own size.
  CaseBuild bench;
  uint32_t flags = 0;
};

// PrintTo names a case in test output.
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.op; }

// ---- writing cases -----------------------------------------------------------------

// A declared input: values drawn uniformly from [lo, hi) in the config's
// dtype, or `value` (converted to float32 in a float32 run) when given.
struct CaseInput {
  std::string name;
  Shape shape;
  std::optional<Tensor> value = std::nullopt;
  double lo = -1.0, hi = 1.0;
};
using In = std::vector<Value>;
using InputsBuild = std::function<Value(Graph&, const In&)>;

// Over returns a builder that declares `inputs` and outputs `build`'s value.
CaseBuild Over(std::vector<CaseInput> inputs, InputsBuild build);

// WithNaNs returns `t` (float32 or float64) with NaN at the flat positions.
Tensor WithNaNs(Tensor t, std::initializer_list<int64_t> positions);

// FloatsOf returns `values` as a float tensor of dtype d (float32 or
// float64).
Tensor FloatsOf(DType d, const Shape& shape, const std::vector<double>& values);

// UnaryCase: the case of a float op y = f(x), x drawn from [lo, hi): a
// gradcheck-sized config (4, 5), a config through the kernels' vector
// paths (37, 129), and a bench of (1024, 1024).
OpCase UnaryCase(Value (*f)(Value), double lo = -1.0, double hi = 1.0);

// BinaryCase: the case of y = f(a, b) on every numeric dtype, broadcast
// and not, benched at (1024, 1024) with a broadcast row.
OpCase BinaryCase(Value (*f)(Value, Value));

// With returns `c` with `more` configs after its own.
//   DAGRAD_OP_CASE(mul, With(BinaryCase(Mul), {{.name = "same_input_twice", ...}}));
OpCase With(OpCase c, std::vector<OpConfig> more);

// ---- the registry ------------------------------------------------------------------

// RegisterOpCase adds `c` as the case of `op`.
bool RegisterOpCase(const char* op, OpCase c);

// AllOpCases returns every registered case, in registration order.
const std::vector<OpCase>& AllOpCases();

// FindOpCase returns the case of `op`, or null.
const OpCase* FindOpCase(const std::string& op);

// ---- running cases -----------------------------------------------------------------

// ConfigTestName is "<op>_<config>_<dtype>", the name of a config's tests
// ("<op>_<config>" for a config of one dtype; no "_<config>" for an
// unnamed one).
std::string ConfigTestName(const OpCase& c, const OpConfig& config, DType d);

// ToCrossCase returns `config` in dtype `d` as a backend cross-check case.
CrossCase ToCrossCase(const OpCase& c, const OpConfig& config, DType d);

// GradCheckConfig runs `config` in float64 through GradCheck.
absl::Status GradCheckConfig(const OpCase& c, const OpConfig& config);

// OpsGradchecked returns the ops of `config`'s float64 graph whose outputs
// depend on an input (what its gradcheck differentiates through).
absl::StatusOr<std::vector<std::string>> OpsGradchecked(const OpConfig& config);

// DTypeSuffix is the dtype's short name in test names: f32, f64, i32, i64,
// bool, bf16, f16.
const char* DTypeSuffix(DType d);

}  // namespace dagrad::testing

#define DAGRAD_OP_CASE_CONCAT_INNER_(a, b) a##b
#define DAGRAD_OP_CASE_CONCAT_(a, b) DAGRAD_OP_CASE_CONCAT_INNER_(a, b)

// DAGRAD_OP_CASE(op, fields...) registers the case of the op named `op`
// (its OpDef's name; a composite's own name): designated initializers of
// OpCase after .op, or one OpCase value (UnaryCase(...)).
#define DAGRAD_OP_CASE(op_name, ...)                                   \
  static const bool DAGRAD_OP_CASE_CONCAT_(dagrad_op_case_, op_name) = \
      ::dagrad::testing::RegisterOpCase(#op_name, ::dagrad::testing::OpCase{__VA_ARGS__})

#endif  // DAGRAD_TESTS_SUPPORT_OP_CASE_H_
