// ops/onnx/import_context.h
//
// What the ONNX importer's per-op functions see (internal to ops/onnx/).
// The importer is a table keyed by ONNX op type (import_ops_*.cc); each
// entry is one small function that reads its node's inputs and attributes
// through an OnnxNodeContext and returns the node's outputs built from
// dagrad builders. Adding an op is adding one entry.
//
//   absl::StatusOr<std::vector<Value>> ImportRelu(OnnxNodeContext& c) {
//     return c.Outputs({Relu(c.input(0))});
//   }
//
// An input is a Value, a tensor known at import time, or both. Known
// tensors come from Constant nodes, initializers and folded shape
// arithmetic (import_fold.cc); an op that needs a value to build (Reshape's
// shape, Slice's starts, Pow's exponent) reads it with KnownInput or
// KnownInts, and `input` turns a known tensor into a graph node the first
// time an op consumes it as data: a constant, or for a float initializer
// the trainable Parameter it stands for.

#ifndef DAGRAD_OPS_ONNX_IMPORT_CONTEXT_H_
#define DAGRAD_OPS_ONNX_IMPORT_CONTEXT_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "engine/tensor.h"

namespace dagrad {

// OnnxInitializer is a float initializer that stands for a trainable
// parameter (import.cc says which do): its ONNX name and the value the file
// holds.
struct OnnxInitializer {
  std::string name;
  Tensor value;
  std::string scope, leaf;  // its Parameter's path: scope "layers/0", leaf "weight"
};

// OnnxOperand is one named ONNX value during import.
struct OnnxOperand {
  Value value;                  // null until a graph node holds it
  std::optional<Tensor> known;  // its value, when it is a constant known at import
  // A trainable initializer: its value is known too, but only an op that
  // needs it to build reads it so (KnownInput); where an op reads it as data,
  // `input` makes it a Parameter (InitializerParameter), so that it trains.
  std::optional<OnnxInitializer> trainable;
};

// OnnxValues holds every named value during import; a node hash map, so
// that pointers to its operands stay valid as it grows.
using OnnxValues = absl::node_hash_map<std::string, OnnxOperand>;

class OnnxNodeContext {
 public:
  // `inputs` holds one pointer per node input, null for an absent optional
  // one (an empty name).
  OnnxNodeContext(Graph& g, const onnx::NodeProto& node, int64_t opset,
                  std::vector<OnnxOperand*> inputs)
      : g_(g), node_(node), opset_(opset), inputs_(std::move(inputs)) {}

  Graph& graph() { return g_; }
  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return opset_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i] != nullptr; }

  // input returns input i as a Value (a constant for a known tensor, the
  // Parameter of a trainable initializer), or an error Value when it is
  // absent.
  Value input(int i);
  // known returns input i's tensor when it is known at import (a constant
  // or an initializer), else null.
  const Tensor* known(int i) const;
  // KnownInput returns input i's value; Unimplemented, naming the input,
  // when it is computed at run time (dagrad needs it to build the graph).
  absl::StatusOr<Tensor> KnownInput(int i, absl::string_view what) const;
  // KnownInts returns a known integer input as int64 values.
  absl::StatusOr<std::vector<int64_t>> KnownInts(int i, absl::string_view what) const;

  // Attributes, with defaults when absent. Int, Float and Ints given an
  // attribute of another type return the default and record the error,
  // which attr_error returns (the import returns it before its own).
  const onnx::AttributeProto* attr(absl::string_view name) const;
  int64_t Int(absl::string_view name, int64_t fallback) const;
  float Float(absl::string_view name, float fallback) const;
  std::vector<int64_t> Ints(absl::string_view name) const;
  const absl::Status& attr_error() const { return attr_error_; }

  // Error returns InvalidArgument; Unsupported returns Unimplemented: a
  // valid node that uses a feature dagrad lacks.
  absl::Status Error(absl::string_view message) const;
  absl::Status Unsupported(absl::string_view message) const;

  // Axis returns `axis` for a tensor of `rank`, counting a negative one
  // from the end; InvalidArgument when out of range.
  absl::StatusOr<int64_t> Axis(int64_t axis, int rank) const;

  // Outputs checks that every value is a node (returning the first error)
  // and returns them.
  absl::StatusOr<std::vector<Value>> Outputs(std::vector<Value> values) const;

 private:
  // Typed returns the attribute `name` if it has type `type`; null when it
  // is absent, or of another type (recorded in attr_error_).
  const onnx::AttributeProto* Typed(absl::string_view name,
                                    onnx::AttributeProto::AttributeType type) const;

  Graph& g_;
  const onnx::NodeProto& node_;
  mutable absl::Status attr_error_;
  int64_t opset_;
  std::vector<OnnxOperand*> inputs_;
};

using OnnxOpImporter = absl::StatusOr<std::vector<Value>> (*)(OnnxNodeContext&);

// OnnxOpEntry is one row of the import table.
struct OnnxOpEntry {
  const char* op_type;
  OnnxOpImporter import;
  // foldable: evaluated at import when every input is known. False for
  // ops whose result depends on the run (Dropout).
  bool foldable = true;
};

// The table, by family (import_ops_*.cc).
std::vector<OnnxOpEntry> OnnxMathOps();
std::vector<OnnxOpEntry> OnnxShapeOps();
std::vector<OnnxOpEntry> OnnxNnOps();
std::vector<OnnxOpEntry> OnnxConstantOps();

// DimsOf returns the dims of `v`'s shape, as an importer's attribute needs them.
inline std::vector<int64_t> DimsOf(const Value& v) {
  return std::vector<int64_t>(v.shape().dims().begin(), v.shape().dims().end());
}

// FindOnnxOp returns the entry for an op of the default domain, or null.
const OnnxOpEntry* FindOnnxOp(absl::string_view op_type);

// RequireFloatInput returns Unimplemented for a value that is not float32
// or float64 (dagrad's math ops are float-only), naming its dtype.
absl::Status RequireFloatInput(const OnnxNodeContext& c, const Value& x);

// ScalarConstant returns a rank-0 constant of `dtype` holding `value`. An
// integer reaches an integer dtype exactly (never through a double); a
// value the dtype cannot hold (2^40 as int32, 0.5 as int64, 2 as bool) is
// an error Value naming it, never an undefined conversion.
//
//   Value bound = ScalarConstant(g, DType::kInt64, INT64_MAX);  // exact
//   Value zero = ScalarConstant(g, DType::kFloat32, 0.0);
Value ScalarConstant(Graph& g, DType dtype, int64_t value);
Value ScalarConstant(Graph& g, DType dtype, double value);

// IndexRange returns int64 start, start + step, ... up to but excluding
// limit, exactly, as ONNX's Range: max(ceil((limit - start) / step), 0)
// elements, each start + i * step. It is an int64 Arange (exact to the ends
// of int64), made when the plan is compiled; its error is returned as a
// status: InvalidArgument for a step of 0 or more elements than a tensor
// may hold.
//
//   DAGRAD_ASSIGN_OR_RETURN(Value r, IndexRange(g, INT64_MAX - 2, INT64_MAX, 1));  // 2 elements
absl::StatusOr<Value> IndexRange(Graph& g, int64_t start, int64_t limit, int64_t step);

// CleanParameterPath splits PyTorch's "layers.0.linear1.weight" into the
// scope path "layers/0/linear1" and the name "weight", whose checkpoint
// name is the ONNX name again; nullopt for a name that does not split
// cleanly (an empty part, a '/': "a..b", "x/y").
std::optional<std::pair<std::string, std::string>> CleanParameterPath(const std::string& name);

// NameApart flattens an ONNX name that is no clean path into one graph
// name ('/' and '.' as '_', "onnx_value" for ""), the first of flat,
// flat_2, flat_3, ... not in `taken`, which it adds: with the clean names
// taken first, "a..b" beside a clean "a__b" becomes "a__b_2", and the clean
// one keeps its own.
std::string NameApart(absl::string_view name, absl::flat_hash_set<std::string>& taken);

// InitializerParameter returns the Parameter a trainable initializer stands
// for, at its scope and leaf.
Value InitializerParameter(Graph& g, const OnnxInitializer& init);

// TensorAsDoubles returns a numeric tensor's elements as doubles, for
// values that are doubles in the math they feed (an exponent, a ratio, as
// in ONNX Runtime and numpy); an integer beyond 2^53 rounds, so nothing
// that must stay exact (a shape, a bound, a fill value) is read with it.
absl::StatusOr<std::vector<double>> TensorAsDoubles(const Tensor& t);

// IsDefaultDomain is true for "" and "ai.onnx".
bool IsDefaultDomain(absl::string_view domain);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_IMPORT_CONTEXT_H_
