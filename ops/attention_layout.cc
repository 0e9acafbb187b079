#include "ops/internal/attention_layout.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/graph.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// OperandDims: an operand's batch, length and head size, and its layout.
struct OperandDims {
  int64_t B, L, Dh;
  HeadsOperand at;
};

// OperandOf reads q, k or v: (B, L, H * Dh), heads side by side, or
// (B, H, L, Dh), heads first.
absl::StatusOr<OperandDims> OperandOf(const Shape& s, int64_t heads, const char* name) {
  if (s.rank() == 3 && s[2] % heads == 0) {
    const int64_t Dh = s[2] / heads;
    return OperandDims{s[0], s[1], Dh, {0, s[1] * s[2], Dh, s[2]}};
  }
  if (s.rank() == 4 && s[1] == heads) {
    return OperandDims{s[0], s[2], s[3], {0, s[1] * s[2] * s[3], s[2] * s[3], s[3]}};
  }
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be (B, L, H * Dh) or (B, H, L, Dh) with H = heads = ", heads,
                   ", got ", s.ToString()));
}

// Packed reads qkv (B, T, 3E): q, k and v side by side, E = H * Dh.
absl::Status Packed(const Shape& qkv, AttentionLayout& a) {
  if (qkv.rank() != 3 || qkv[2] % (3 * a.H) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "packed qkv must be (B, T, 3 * H * Dh) with H = heads = ", a.H, ", got ",
        qkv.ToString()));
  }
  a.B = qkv[0];
  a.T = a.S = qkv[1];
  a.Dh = qkv[2] / (3 * a.H);
  const int64_t E = a.H * a.Dh, row = 3 * E;
  a.q = {0, a.T * row, a.Dh, row};
  a.k = {E, a.T * row, a.Dh, row};
  a.v = {2 * E, a.T * row, a.Dh, row};
  a.dbias_offset = qkv.num_elements();
  return absl::OkStatus();
}

absl::Status Separate(const Shape& q, const Shape& k, const Shape& v, AttentionLayout& a) {
  DAGRAD_ASSIGN_OR_RETURN(const OperandDims qd, OperandOf(q, a.H, "q"));
  DAGRAD_ASSIGN_OR_RETURN(const OperandDims kd, OperandOf(k, a.H, "k"));
  DAGRAD_ASSIGN_OR_RETURN(const OperandDims vd, OperandOf(v, a.H, "v"));
  if (kd.B != qd.B || vd.B != qd.B || kd.Dh != qd.Dh || vd.Dh != qd.Dh || vd.L != kd.L) {
    return absl::InvalidArgumentError(absl::StrCat(
        "q, k and v must have one batch size and head size, and k and v one length; got q ",
        q.ToString(), ", k ", k.ToString(), ", v ", v.ToString(), " with ", a.H, " heads"));
  }
  a.B = qd.B;
  a.T = qd.L;
  a.S = kd.L;
  a.Dh = qd.Dh;
  a.q = qd.at;
  a.k = kd.at;
  a.v = vd.at;
  a.dk_offset = q.num_elements();
  a.dv_offset = a.dk_offset + k.num_elements();
  a.dbias_offset = a.dv_offset + v.num_elements();
  return absl::OkStatus();
}

MaskStrides StridesOf(const Shape& mask, const Shape& scores) {
  const Dims st = BroadcastStrides(mask, scores);
  return {true, st[0], st[1], st[2], st[3]};
}

// Present is whether the node has input i (an empty tensor's data may be
// null, so the kernel's has() cannot tell).
bool Present(const KernelContext& ctx, int i) {
  return i < static_cast<int>(ctx.node.inputs.size()) && ctx.node.inputs[i] != kNoNode;
}

}  // namespace

absl::StatusOr<AttentionLayout> ResolveAttention(const Attrs& attrs, const Shape& q,
                                                 const Shape* k, const Shape* v) {
  AttentionLayout a;
  a.H = attrs.GetInt("heads", 1);
  if (a.H < 1) return absl::InvalidArgumentError(absl::StrCat("heads must be >= 1, got ", a.H));
  a.packed = attrs.GetBool("packed");
  a.scale = attrs.GetFloat("scale", 1.0);
  a.causal = attrs.GetBool("causal");
  a.causal_offset = attrs.GetInt("causal_offset");
  a.dropout = attrs.GetFloat("dropout");
  if (a.packed != (k == nullptr) || (k == nullptr) != (v == nullptr)) {
    return absl::InvalidArgumentError("attention takes q, k and v, or one packed qkv");
  }
  DAGRAD_RETURN_IF_ERROR(a.packed ? Packed(q, a) : Separate(q, *k, *v, a));
  const int64_t E = a.H * a.Dh;
  a.out = {0, a.T * E, a.Dh, E};
  a.grad_elements = a.dbias_offset;
  return a;
}

absl::StatusOr<AttentionLayout> AttentionLayoutOf(const KernelContext& ctx) {
  auto shape = [&](int i) { return Present(ctx, i) ? ctx.in(i).shape : nullptr; };
  DAGRAD_ASSIGN_OR_RETURN(AttentionLayout a, ResolveAttention(ctx.attrs(), *ctx.in(kAttnQ).shape,
                                                              shape(kAttnK), shape(kAttnV)));
  const Shape scores({a.B, a.H, a.T, a.S});
  if (Present(ctx, kAttnKeep)) a.keep = StridesOf(*ctx.in(kAttnKeep).shape, scores);
  if (Present(ctx, kAttnBias)) a.bias = StridesOf(*ctx.in(kAttnBias).shape, scores);
  a.lens = Present(ctx, kAttnValidLens);
  a.lens_2d = a.lens && ctx.in(kAttnValidLens).rank() == 2;
  a.bias_grad = ctx.attrs().GetBool("bias_grad");
  if (a.bias_grad) a.grad_elements += scores.num_elements();
  return a;
}

}  // namespace dagrad
