// ops/onnx/import_fold.cc

#include "ops/onnx/import_fold.h"

#include <memory>
#include <vector>

#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

bool AllKnown(const std::vector<OnnxOperand*>& inputs) {
  for (const OnnxOperand* in : inputs) {
    if (in != nullptr && !in->known && !in->trainable) return false;
  }
  return true;
}

int64_t OutputBytes(const std::vector<Value>& outputs) {
  int64_t total = 0;
  for (const Value& v : outputs) {
    absl::StatusOr<int64_t> bytes = ValidateBytes(v.shape(), v.dtype());
    if (!bytes.ok() || *bytes > kMaxFoldedBytes - total) return kMaxFoldedBytes + 1;
    total += *bytes;
  }
  return total;
}

}  // namespace

absl::StatusOr<std::optional<std::vector<Tensor>>> FoldNode(
    const OnnxOpEntry& entry, const onnx::NodeProto& node, int64_t opset,
    const std::vector<OnnxOperand*>& inputs) {
  if (!entry.foldable || !AllKnown(inputs)) return std::nullopt;
  Graph scratch;
  std::vector<OnnxOperand> copies;
  copies.reserve(inputs.size());
  std::vector<OnnxOperand*> pointers;
  for (const OnnxOperand* in : inputs) {
    if (in == nullptr) {
      pointers.push_back(nullptr);
      continue;
    }
    copies.push_back(OnnxOperand{Value(), in->known, in->trainable});
    pointers.push_back(&copies.back());
  }
  OnnxNodeContext context(scratch, node, opset, std::move(pointers));
  absl::StatusOr<std::vector<Value>> imported = entry.import(context);
  DAGRAD_RETURN_IF_ERROR(context.attr_error());
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> outputs, std::move(imported));
  // An initializer the op read as data (input() made its Parameter in the
  // scratch graph) is a parameter: what the op computes changes as it
  // trains, so the node is built into the graph, not folded.
  for (const OnnxOperand& copy : copies) {
    if (copy.trainable && !copy.value.is_null()) return std::nullopt;
  }
  if (OutputBytes(outputs) > kMaxFoldedBytes) return std::nullopt;
  Executor executor(scratch);
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, executor.Compile(outputs));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> values, executor.Run(*plan, {}));
  return values;
}

}  // namespace dagrad
