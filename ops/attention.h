// ops/attention.h
//
// Fused scaled dot-product attention, flash-style: one op reads q, k and v
// (in place from a packed projection where they are side by side), runs
// q·kᵀ, the masked softmax, dropout and the product with v block by block
// with an online softmax, and writes the heads' outputs already merged,
// (B, T, H * Dh). No (B, H, T, S) tensor is ever in memory, forward or
// backward (except the bias's gradient, when one is asked for: it has that
// shape).
//
//   Value ctx = PackedAttention(qkv, {.causal = true}, {.heads = 2, .scale = 0.5});
//   // qkv (B, T, 3 * 2 * 4) -> ctx (B, T, 8)
//   Value y = Attention(q, k, v, {.valid_lens = lens}, {.heads = 2, .scale = 0.5});
//   // q (B, T, 8), k and v (B, S, 8) -> y (B, T, 8)
//
// It computes exactly what this composed subgraph does (models/nn/
// attention.h, AttendHeads), to float rounding:
//   weights = MaskedSoftmax(q·kᵀ, mask, scale)       (B, H, T, S)
//   out     = merge_heads(Dropout(weights, p) · v)     (B, T, H * Dh)
// including dropout's mask: the keep decision of element (b, h, t, s) is
// the one Dropout would draw for element ((b H + h) T + t) S + s of the
// weights on the same stream (ops/dropout.h), so the fused op and a
// composed subgraph whose Dropout has its stream agree bit for bit on which
// weights are dropped. The stream word is the node's (Node::RandomStream),
// as for a Dropout node: its "stream" attribute when set, else from its
// id; two graphs built apart (the layer's two paths, models/nn/attention.h)
// draw other masks unless both set it. A query whose keys are all masked gives zeros, and
// zero gradients, never NaN (dagrad's convention, ops/softmax.h).
//
// Operand layouts (q, k and v each pick theirs by rank; Dh is the head size):
//   rank 3: (B, L, H * Dh), heads side by side: the projection's own
//           layout, so no head split (permute) is needed, and
//   rank 4: (B, H, L, Dh), heads first (rotary embeddings and KV caches
//           produce these).
// PackedAttention's qkv (B, T, 3 * H * Dh) holds q, k and v side by side
// (the in-projection of self-attention), read where they lie.
//
// The gradient is one backward op (attention_grad), which recomputes the
// softmax's row statistics instead of storing them (an op has one output,
// engine/op.h) and writes dq, dk, dv (or, packed, d(qkv)) and the bias's
// gradient into one buffer that views split. Its sums run in a fixed order
// (no atomics): the same inputs give the same bits on every run. It has no
// gradient rule of its own, so second derivatives through Attention are
// Unimplemented; the composed subgraph has them.
//
// Rounding in the backward. softmax's backward needs each row's D = sum
// P ∘ dP. The GPU, and the CPU when the keys are more than one block (S >
// 256), take it as rowsum(dO ∘ O) from the forward's output, as
// FlashAttention does, which needs no second pass over the keys; the CPU
// with one block sums the row itself, as the composed subgraph does. The
// two differ by rounding, about float's epsilon times |dP|, which dS =
// P ∘ (dP - D) keeps and dK (dQ) multiplies by |q| (|k|): on a saturated,
// one-hot row the composed subgraph's dK is exactly 0, the fused one's
// about 1e-7 |dO| |v| |q| scale in float32 (1.6e-4 at |q| = 1e4). Where
// attention logits grow that large and the gradient must be exact, build
// the composed subgraph (--attention=composed).

#ifndef DAGRAD_OPS_ATTENTION_H_
#define DAGRAD_OPS_ATTENTION_H_

#include <cstdint>

#include "engine/graph.h"
#include "ops/softmax.h"

namespace dagrad {

struct AttentionOptions {
  int64_t heads = 1;     // H: >= 1; a rank-4 operand's axis 1 must equal it
  double scale = 1.0;    // multiplies q·kᵀ before the bias: 1 / sqrt(Dh) as a rule
  double dropout = 0.0;  // p, on the softmax weights, in training runs only
};

// Attention returns merge_heads(dropout(masked_softmax(q·kᵀ, mask, scale))
// · v): q (B, T, H*Dh) or (B, H, T, Dh); k and v (B, S, H*Dh) or (B, H, S,
// Dh) -> (B, T, H * Dh), q's dtype (float32 or float64). The mask is
// MaskedSoftmax's (ops/softmax.h), over scores (B, H, T, S): keep (bool)
// and bias (float, differentiable) broadcastable to (B, H, T, S),
// valid_lens (B) or (B, T), causal with causal_offset.
//
// Errors (in the returned Value, naming the op and the shapes): operands
// not of rank 3 or 4, of different float dtypes, batch sizes or head
// sizes; k and v of different lengths; a width not divisible by heads, or
// a rank-4 operand with another head count; heads < 1; the mask's errors
// as MaskedSoftmax's; a non-finite scale; dropout outside [0, kMaxDropout]
// (ValidateDropout). At run time, InvalidArgument naming the offending
// valid length when one lies outside [0, S].
//
//   Value y = Attention(q, k, v, {.causal = true, .causal_offset = S - T},
//                       {.heads = 2, .scale = 0.5});   // q (B, T, 8), k, v (B, S, 8)
Value Attention(Value q, Value k, Value v, const SoftmaxMask& mask = {},
                const AttentionOptions& options = {});

// PackedAttention is Attention of q, k and v stored side by side in qkv
// (B, T, 3 * H * Dh): q = qkv[..., 0:E], k = qkv[..., E:2E], v =
// qkv[..., 2E:3E], E = H * Dh, so S = T. Its gradient is d(qkv), one
// (B, T, 3E) tensor. Errors: qkv not float of rank 3 with a last axis
// divisible by 3 * heads, and Attention's.
//
//   Value ctx = PackedAttention(qkv, {.causal = true}, {.heads = 2, .scale = 0.5});
//   // qkv (B, T, 3 * 2 * 4) -> ctx (B, T, 8)
Value PackedAttention(Value qkv, const SoftmaxMask& mask = {},
                      const AttentionOptions& options = {});

}  // namespace dagrad

#endif  // DAGRAD_OPS_ATTENTION_H_
