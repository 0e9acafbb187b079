// ops/autodiff/autodiff.h
//
// Reverse-mode automatic differentiation that emits graph. Gradients walks
// back from `loss` and calls each op's gradient rule, which builds ordinary
// op nodes in the same graph, under the scope "grad/<forward scope>" and
// marked as gradient nodes. The result can be compiled, run on any device,
// drawn as DOT, and differentiated again (second derivatives).
//
//   Value loss = Mean(Pow(Sub(MatMul(x, w), y), 2));
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, {w}));
//   // grads[0] has w's shape; compile it like any other value.
//
// Gradients reaching a node along several paths are summed (gradients of
// slices that tile a value are concatenated instead: the same sum, cheaper). Broadcasting is
// undone here, once: a rule may return a gradient of its output's shape for
// a broadcast input, and it is summed back to the input's shape. A value
// the loss does not depend on gets a null Value (no zeros are computed).
// Gradients stop at non-differentiable ops (comparisons, casts to integers,
// Detach) and at non-float values.
//
// A gradient has the dtype GradientDType (engine/dtype.h) gives its value:
// the value's own for float32 and float64, float32 for bfloat16 and
// float16. So in mixed precision — Cast(w, kBFloat16) read by a MatMul —
// the gradients of the bfloat16 copies are float32, summed in float32 where
// a copy fans out, and w's gradient is float32 like w. A rule that breaks
// this is an Internal error naming the op.

#ifndef DAGRAD_OPS_AUTODIFF_AUTODIFF_H_
#define DAGRAD_OPS_AUTODIFF_AUTODIFF_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph.h"

namespace dagrad {

// Gradients returns d(loss)/d(wrt[i]) for each i, null where loss does not
// depend on wrt[i] (a value the loss does not use, one added to the graph
// after the loss). `seed` is the gradient flowing into loss; when null,
// loss must hold one element and the seed is 1.
//
// Errors: InvalidArgument for an invalid or foreign Value, a non-float loss
// or wrt, a non-scalar loss without a seed, or a seed of the wrong type;
// Unimplemented when the path reaches a differentiable op that has no
// gradient rule (the message names the op, the node and its path to the
// loss); the first error a gradient rule produced.
absl::StatusOr<std::vector<Value>> Gradients(Value loss, absl::Span<const Value> wrt,
                                             Value seed = Value());

}  // namespace dagrad

#endif  // DAGRAD_OPS_AUTODIFF_AUTODIFF_H_
