// engine/op.h
//
// OpDef: everything dagrad knows about one op, defined once, next to its
// kernel, in ops/<family>.cc: name, DOT label, shape/dtype inference, CPU
// kernel, gradient rule, and the facts the planner needs (may it run in
// place, is it a view, which inputs does it write).
//
// CUDA kernels are not here: they live in ops/cuda/, which registers them
// against the OpDef with the CUDA device (engine/cuda/kernel_registry.h).
// That keeps OpDefs constant data, keeps a build without CUDA free of CUDA
// symbols, and gives one table to check for coverage. Likewise the ONNX
// layer (ops/onnx/, above the ops) writes an op as the OpDef's `onnx`
// field describes, and a test fails for an op that describes none.
//
// An op's gradient rule builds ordinary graph nodes, so backward passes are
// graphs too. Ops fall in three groups for autodiff:
//   - differentiable with a rule (`grad` set);
//   - not differentiable (`differentiable = false`: comparisons, arange,
//     casts to integers): gradients stop there, which is not an error;
//   - differentiable but without a rule (`grad` null): reaching it from a
//     loss is an error that names the node and its path to the loss.

#ifndef DAGRAD_ENGINE_OP_H_
#define DAGRAD_ENGINE_OP_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/attrs.h"
#include "engine/dtype.h"
#include "engine/graph.h"
#include "engine/shape.h"

namespace dagrad {

class Communicator;

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;
};

// InferContext is what shape inference sees. Absent optional inputs are
// null. Messages returned need not name the op or the inputs' shapes: the
// graph adds both.
struct InferContext {
  const Attrs& attrs;
  absl::Span<const TensorType* const> inputs;

  const TensorType& in(int i) const { return *inputs[i]; }
  bool has(int i) const {
    return i < static_cast<int>(inputs.size()) && inputs[i] != nullptr;
  }
};
using InferFn = absl::StatusOr<TensorType> (*)(const InferContext&);

// TensorRef is a kernel's view of one dense row-major buffer.
struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  const Shape* shape = nullptr;

  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
  int64_t num_elements() const { return shape->num_elements(); }
  size_t nbytes() const { return num_elements() * SizeOf(dtype); }
  int rank() const { return shape->rank(); }
  int64_t dim(int i) const { return (*shape)[i]; }
};

// RunContext carries what a run adds to a kernel's inputs.
struct RunContext {
  bool training = false;  // dropout is the identity when false
  uint64_t seed = 0;      // dropout key
  uint64_t step = 0;      // dropout counter: advance it once per training step
  // device_state is the device's state for its kernels (Device::
  // kernel_state(): engine/cuda's CudaContext, with the stream, the cuBLAS
  // handle and the error record); null on the CPU.
  void* device_state = nullptr;
  // communicator carries the collective ops' reductions between processes
  // (engine/device/communicator.h); never null in a run.
  Communicator* communicator = nullptr;
  // Data parallelism: this process runs rows [batch_begin, batch_begin +
  // batch_rows) of the global batch. Dropout offsets its element counter
  // by batch_begin rows, so that its masks are those of one process
  // running the whole batch. batch_rows 0: the whole batch.
  int64_t batch_begin = 0;
  int64_t batch_rows = 0;
};

// KernelContext is what a kernel sees. Absent optional inputs have null data.
struct KernelContext {
  const Node& node;
  absl::Span<const TensorRef> inputs;
  TensorRef output;
  const RunContext& run;

  const TensorRef& in(int i) const { return inputs[i]; }
  bool has(int i) const {
    return i < static_cast<int>(inputs.size()) && inputs[i].data != nullptr;
  }
  const Attrs& attrs() const { return node.attrs; }
};
using Kernel = absl::Status (*)(const KernelContext&);

// GradContext is what a gradient rule sees: the forward node, handles to its
// inputs and output, and `grad`, the gradient of the loss with respect to
// the output. `needs[i]` says whether input i's gradient is wanted.
struct GradContext {
  const Node& node;
  Value output;
  std::vector<Value> inputs;
  Value grad;
  std::vector<bool> needs;

  const Attrs& attrs() const { return node.attrs; }
};
// A gradient rule returns one Value per input, the gradient of the loss with
// respect to it; a null Value means none. A gradient may have the shape of
// the output where the input was broadcast: autodiff reduces it.
using GradFn = std::vector<Value> (*)(const GradContext&);

// A ViewFn says whether a node's output can alias its input 0 — the same
// bytes, from a byte offset — and returns that offset, or nullopt when this
// node must copy (a slice that is not contiguous, say).
using ViewFn = std::optional<int64_t> (*)(const Node& node, const Node& input);

// A Placement says where a node writes its input 0 inside an output that is
// zero elsewhere: the block [begin, end) along `axis` (a step-1 unslice).
// Autodiff concatenates gradients whose placements tile a value instead of
// adding them. A PlacementFn returns nullopt for a node that does not place
// its input as one block (a strided unslice).
struct Placement {
  int axis = 0;  // in [0, rank)
  int64_t begin = 0;
  int64_t end = 0;
};
using PlacementFn = std::optional<Placement> (*)(const Node& node);

// How ONNX export writes an op (the ONNX layer, ops/onnx/export_ops.h,
// reads it; the engine and the ops include nothing of ONNX). Every op
// declares one; tests/onnx/onnx_coverage_test.cc fails for an op left at
// kUndeclared, for a kExporter op without an exporter, and for an exporter
// of an op that is not kExporter.
enum class OnnxKind : uint8_t {
  kUndeclared,  // the default: an error in the coverage test
  kTwin,        // one ONNX node, op `text`, on the same inputs ("Relu")
  kExporter,    // written by an exporter function of the ONNX layer
  kNone,        // no ONNX form; `text` says why ("a backward op")
};
struct OnnxForm {
  OnnxKind kind = OnnxKind::kUndeclared;
  absl::string_view text;
};
//   .onnx = OnnxTwin("Relu")   .onnx = kOnnxExporter   .onnx = NoOnnx("why")
constexpr OnnxForm OnnxTwin(absl::string_view onnx_op) { return {OnnxKind::kTwin, onnx_op}; }
inline constexpr OnnxForm kOnnxExporter = {OnnxKind::kExporter, {}};
constexpr OnnxForm NoOnnx(absl::string_view why) { return {OnnxKind::kNone, why}; }

struct OpDef {
  absl::string_view name;       // "matmul": unique, used in paths and errors
  absl::string_view dot_label;  // "MatMul": what DOT prints
  InferFn infer = nullptr;
  Kernel cpu = nullptr;
  GradFn grad = nullptr;
  bool differentiable = true;   // false: gradients stop here
  uint32_t nondiff_inputs = 0;  // bit i: input i takes no gradient (masks)
  bool inplace = false;         // the output may reuse input 0's buffer
  ViewFn view = nullptr;        // the output may alias input 0 (see ViewFn)
  PlacementFn placement = nullptr;  // the output is input 0 placed in zeros
  bool random = false;          // reads the run's RNG: never folded or merged
  // collective: talks to the other processes of the job
  // (RunContext::communicator), so it is never folded: every rank must run
  // it.
  bool collective = false;
  // early: the planner runs it as soon as its inputs are ready, before
  // ready nodes of lower ids (a collective's start, so that its transfer
  // overlaps the work that follows).
  bool early = false;
  uint32_t mutates = 0;         // bit i: the op writes input i (a variable)
  // reduced_floats: the 16-bit floats (DTypeBit(DType::kBFloat16),
  // DTypeBit(DType::kFloat16)) the op takes as inputs or gives as output;
  // its kernels on every device handle them. Building any other op on one,
  // or so that it would produce one, is refused (CheckReducedFloats in
  // ops/op_util.h), so a kernel never meets a 16-bit float it lacks.
  uint32_t reduced_floats = 0;
  // check validates what of the inputs' values the kernel would reject
  // (Adam's step), writing nothing. The executor calls it before any kernel
  // of a run, with the inputs it can read on the host — feeds and constants;
  // the others are absent (null data) and left to the kernel. An op that
  // writes a variable and can fail has one, so that a bad feed fails the
  // run before any update.
  Kernel check = nullptr;
  // onnx: how ONNX export writes the op (OnnxForm above).
  OnnxForm onnx;

  // Writes says whether the op writes input `i` (its bit in `mutates`), and
  // NoGradient whether input `i` takes no gradient (nondiff_inputs); an op
  // of many inputs (Concat, SumOfSquares) has no bit past 31.
  bool Writes(size_t i) const { return i < 32 && (mutates >> i & 1); }
  bool NoGradient(size_t i) const { return i < 32 && (nondiff_inputs >> i & 1); }
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_OP_H_
