// ops/onnx/import_fold.h
//
// Folding at import (internal to ops/onnx/): a node whose inputs are all
// known is imported into a scratch graph of constants and run there on the
// CPU, so the shape arithmetic PyTorch exports (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape) leaves only its result, and every op in
// the import table folds with the kernels that run it.
//
//   DAGRAD_ASSIGN_OR_RETURN(auto folded, FoldNode(*entry, node, opset, inputs));
//   if (folded) { /* the outputs' values */ }

#ifndef DAGRAD_OPS_ONNX_IMPORT_FOLD_H_
#define DAGRAD_OPS_ONNX_IMPORT_FOLD_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tensor.h"
#include "ops/onnx/import_context.h"

namespace dagrad {

// Outputs larger than this are not folded but built into the graph.
inline constexpr int64_t kMaxFoldedBytes = int64_t{16} << 20;

// FoldNode returns the values of the node's outputs when `entry` is
// foldable, every present input is known (a trainable initializer only
// when the op reads its value, not the data it stands for), and the
// outputs fit in kMaxFoldedBytes; nullopt when the node does not fold.
// Errors: those of the op's import and kernels (an index out of range).
absl::StatusOr<std::optional<std::vector<Tensor>>> FoldNode(
    const OnnxOpEntry& entry, const onnx::NodeProto& node, int64_t opset,
    const std::vector<OnnxOperand*>& inputs);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_IMPORT_FOLD_H_
