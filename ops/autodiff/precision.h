// ops/autodiff/precision.h
//
// Mixed precision as a rewrite of the forward graph, not a second model.
// ApplyPrecision takes values of a built forward (a loss, logits) and
// returns the same values computed under a Precision:
//
//  - kFloat32: the graph as built.
//  - kTF32: the graph as built, too: TF32 is a property of the device, not
//    of the graph. A CUDA device made with CudaOptions::allow_tf32 rounds
//    its float32 matrix-product inputs to TF32 (cuBLAS and the fused
//    attention kernel); `dagrad train --precision=tf32` makes its device so.
//    On the CPU, tf32 is float32.
//  - kBFloat16: every matrix product (MatMul, Linear) whose two operands are
//    float32 reads them cast to bfloat16 and gives float32, its sums
//    accumulated in float32 (ops/matmul.h). Everything else — embeddings,
//    layer norm, softmax, the fused attention op (it takes no bfloat16),
//    the loss, reductions — stays float32. A value read by several products
//    is cast once (one Cast node per parameter per step, shared by all its
//    uses); the parameters and the optimizer's moments stay float32 masters,
//    and their gradients flow back through the casts in float32 (Cast's
//    rule, GradientDType).
//
// How: graph nodes are immutable and ids are a topological order, so the
// rewrite appends. The ancestors of `values` are visited in id order; a
// product is rebuilt on bfloat16 casts of its operands, and every op
// downstream of one is rebuilt (same op, attributes, scope, role and name
// base) on the rewritten inputs; nodes no product feeds are shared with the
// original; a rebuilt random op (Dropout) keeps the original's stream, so
// its masks are float32's. The originals stay in the graph, unused by a
// plan that compiles the rewritten values. Rewriting rewritten values changes nothing.
//
//   Value logits = model(tokens);
//   Value loss = CrossEntropy(logits, targets);
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> bf16,
//                           ApplyPrecision({loss, logits}, Precision::kBFloat16));
//   // bf16[0] is the loss to differentiate and fetch, bf16[1] its logits.
//
// BuildTrainingStep applies OptimizerOptions::precision to its loss itself
// (TrainingStep::loss is the rewritten one); a trainer that also fetches
// other forward values (logits) rewrites them with the loss first, in one
// call, and passes the rewritten loss.

#ifndef DAGRAD_OPS_AUTODIFF_PRECISION_H_
#define DAGRAD_OPS_AUTODIFF_PRECISION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"

namespace dagrad {

enum class Precision { kFloat32, kTF32, kBFloat16 };

// ParsePrecision accepts "fp32", "tf32" and "bf16"; InvalidArgument naming
// the value and the accepted ones otherwise.
//
//   DAGRAD_ASSIGN_OR_RETURN(Precision p, ParsePrecision("bf16"));
absl::StatusOr<Precision> ParsePrecision(const std::string& name);

// PrecisionName returns the name ParsePrecision accepts for `precision`.
const char* PrecisionName(Precision precision);

// ApplyPrecision returns `values` computed under `precision` (see the top
// of this file), in order; for kFloat32 and kTF32, `values` themselves.
// Errors: a null Value's FailedPrecondition, an error Value's own error,
// InvalidArgument for values of different graphs; the first error a
// rebuilt node gives.
absl::StatusOr<std::vector<Value>> ApplyPrecision(absl::Span<const Value> values,
                                                  Precision precision);

}  // namespace dagrad

#endif  // DAGRAD_OPS_AUTODIFF_PRECISION_H_
