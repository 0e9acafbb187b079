// ops/softmax.h
//
// Softmax over the last axis, with every kind of attention mask fused into
// one kernel (no mask tensor is ever materialised), its backward op, and
// log-softmax.
//
//   Value w = MaskedSoftmax(scores, {.valid_lens = lens, .causal = true},
//                           1.0 / std::sqrt(64.0));   // (B, H, T, S) -> same
//   Value p = Softmax(logits);                        // (..., C) -> (..., C)
//
// Masks follow dagrad's convention: a boolean mask means KEEP (true = this
// position may be attended). PyTorch's key_padding_mask has the opposite
// polarity: pass LogicalNot of it. A row with every position masked is all
// zeros, and so is its gradient — never NaN (PyTorch 1.13 returns NaN there;
// d2l's -1e6 fill returns a nearly uniform row).

#ifndef DAGRAD_OPS_SOFTMAX_H_
#define DAGRAD_OPS_SOFTMAX_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/op.h"

namespace dagrad {

// SoftmaxMask says which positions of scores (..., Q, K) may be attended.
// Every member is optional; they combine (a position is kept only when every
// member keeps it). Here q is the index on axis -2 and k on axis -1.
struct SoftmaxMask {
  // keep: bool, broadcastable to scores. False masks the position.
  Value keep;
  // valid_lens: int32/int64 of shape (B), indexing scores' first axis, or
  // (B, Q), indexing the first axis and axis -2; broadcast over the axes
  // between (heads). Positions k >= valid_len are masked. Lengths must lie in
  // [0, K]: anything else is a run-time error.
  Value valid_lens;
  // bias: float (scores' dtype), broadcastable to scores; added after the
  // scale. Differentiable; -inf masks a position like keep = false does.
  Value bias;
  // causal masks k > q + causal_offset. With S cached keys and T new
  // queries (S >= T), causal_offset = S - T lets query q see keys up to
  // its own position in the whole sequence. MultiheadAttention's rotary
  // embedding uses the same alignment: its queries rotate from position
  // S - T, its keys from 0 (models/nn/attention.h).
  bool causal = false;
  int64_t causal_offset = 0;
};

// MaskedSoftmax returns softmax over the last axis of
// z = scale * scores + bias, over the positions `mask` keeps, and 0 at the
// masked positions: scores (..., Q, K) -> (..., Q, K), scores' dtype.
// The gradient flows to scores and bias; keep and valid_lens take none.
//
// Errors (in the returned Value, naming the op and the shapes): scores not
// float or of rank 0; keep not bool or not broadcastable to scores; bias
// not of scores' dtype or not broadcastable; valid_lens not int32/int64, not
// of shape (B) or (B, Q), or given with scores of rank < 2 (rank < 3 for
// (B, Q)); causal with rank < 2; a non-finite scale. At run time,
// InvalidArgument naming the offending length and its position when a
// valid length lies outside [0, K].
//
//   // scores (B, H, T, S); lens (B): keys of sample b beyond lens[b] are padding.
//   Value w = MaskedSoftmax(scores, {.valid_lens = lens}, 0.125);
//   Value w2 = MaskedSoftmax(scores, {.keep = Reshape(pad_keep, {B, 1, 1, S})});
//   Value w3 = MaskedSoftmax(scores, {.causal = true, .causal_offset = S - T});
Value MaskedSoftmax(Value scores, const SoftmaxMask& mask = {}, double scale = 1.0);

// Softmax returns exp(x) / sum(exp(x)) over the last axis (numerically
// stable): x (..., K) -> (..., K). MaskedSoftmax with no mask and scale 1.
//
//   Value p = Softmax(logits);   // (B, C): each row sums to 1
Value Softmax(Value x);

// LogSoftmax returns x - log(sum(exp(x))) over the last axis, computed
// stably in one pass: x (..., K) -> (..., K). Its gradient,
// g - exp(y) * sum(g, -1), is built from ordinary ops, so it differentiates
// again.
//
//   Value logp = LogSoftmax(logits);   // (B, C)
Value LogSoftmax(Value x);

// SoftmaxGrad returns y * (g - sum(g * y, -1, keepdims)): the gradient of a
// softmax with output y (..., K) given the output's gradient g (same shape
// and dtype) -> (..., K). A row of y that is all zeros (fully masked) gives
// zeros. It has a gradient rule of its own, so softmax has second
// derivatives. The node stores its inputs as (g, y), so that the planner may
// write the result over g, which in a backward pass usually dies here while
// y lives on (the matmul after attention needs it too).
//
// Errors: y not float, dtypes or shapes that differ.
//
//   Value dscores = SoftmaxGrad(weights, dweights);   // (B, H, T, S)
Value SoftmaxGrad(Value y, Value g);

// For ops that fuse a masked softmax (ops/attention.cc), so that their
// masks mean and fail exactly as MaskedSoftmax's:
//
// ValidateSoftmaxMask returns MaskedSoftmax's InvalidArgument for a keep,
// valid_lens or bias (each null when absent) that does not fit scores of
// shape `scores` and dtype `dtype`, or for attrs whose "causal" needs
// rank >= 2 or whose "scale" is not finite.
absl::Status ValidateSoftmaxMask(const Shape& scores, DType dtype, const TensorType* keep,
                                 const TensorType* valid_lens, const TensorType* bias,
                                 const Attrs& attrs);

// ReadValidLens returns valid_lens (int32 or int64, (B) or (B, Q)) as
// int64, or InvalidArgument naming the first length outside [0, k] and its
// position.
absl::StatusOr<std::vector<int64_t>> ReadValidLens(const TensorRef& lens, int64_t k);

}  // namespace dagrad

#endif  // DAGRAD_OPS_SOFTMAX_H_
