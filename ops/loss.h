// ops/loss.h
//
// Loss functions, fused: the forward pass and the gradient are each one
// kernel, with no softmax or one-hot tensor in between.
//
//   Value loss = CrossEntropy(logits, targets);   // (B, T, V), (B, T) -> ()
//   DAGRAD_ASSIGN_OR_RETURN(auto grads, Gradients(loss, params));

#ifndef DAGRAD_OPS_LOSS_H_
#define DAGRAD_OPS_LOSS_H_

#include <cstdint>

#include "engine/graph.h"

namespace dagrad {

struct CrossEntropyOptions {
  enum Reduction { kMean, kSum, kNone };
  // Targets equal to ignore_index contribute no loss and no gradient, and
  // are not counted by kMean (PyTorch's default, -100, padding tokens).
  int64_t ignore_index = -100;
  Reduction reduction = kMean;
  // label_smoothing ε in [0, 1]: the target is (1 - ε)·onehot + ε/C, as
  // PyTorch's label_smoothing, so a row's loss is
  // logsumexp(x) - (1 - ε)·x[target] - ε·mean(x).
  double label_smoothing = 0.0;
};

// CrossEntropy returns the negative log-likelihood of `targets` under
// softmax(logits): per row, logsumexp(logits) - logits[target], computed
// stably (max-shifted). logits (..., C) float and targets (...) int32/int64,
// the logits' leading shape -> () for kMean and kSum, (...) for kNone
// (logits' dtype; ignored rows are 0). kMean divides the sum by the number
// of targets that are not ignore_index; when every target is ignored, or
// there are no rows, the mean is 0 and so is its gradient (PyTorch 1.13
// returns NaN there).
// The gradient flows to logits only, through the fused backward-only op
// cross_entropy_grad: (softmax(logits) - smoothed onehot(target)) * g /
// count, zero rows for ignored targets. It has no gradient of its own.
//
// Errors (in the returned Value, naming the op and shapes): logits not float
// or of rank 0; targets not int32/int64 or not of the logits' leading shape;
// label_smoothing outside [0, 1].
// At run time, InvalidArgument naming the position and value of a target
// outside [0, C) that is not ignore_index.
//
//   // logits (B, T, V), tokens (B, T) with padding -100
//   Value loss = CrossEntropy(logits, tokens);
//   Value per_token = CrossEntropy(logits, tokens, {.reduction = CrossEntropyOptions::kNone});
//   Value smoothed = CrossEntropy(logits, tokens, {.label_smoothing = 0.1});
Value CrossEntropy(Value logits, Value targets, CrossEntropyOptions options = {});

}  // namespace dagrad

#endif  // DAGRAD_OPS_LOSS_H_
