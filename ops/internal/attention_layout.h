// ops/internal/attention_layout.h
//
// Where fused attention's kernels (ops/attention_cpu.cc, ops/cuda/
// attention.cu) find their operands: one description of an attention or
// attention_grad node, built from its attributes and its inputs' shapes,
// that both backends index the same way: a kernel takes AttentionLayoutOf
// its context, and reads query t of head h in batch b at q + a.q.At(b, h,
// t), Dh contiguous elements. Internal to the op (the API is
// ops/attention.h).

#ifndef DAGRAD_OPS_INTERNAL_ATTENTION_LAYOUT_H_
#define DAGRAD_OPS_INTERNAL_ATTENTION_LAYOUT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/attrs.h"
#include "engine/device/host_device.h"
#include "engine/op.h"
#include "engine/shape.h"

namespace dagrad {

// The inputs of attention (0-5) and attention_grad (all eight): the
// backward op takes the forward's inputs in the same places, then the
// forward's output and its gradient.
enum AttentionInput {
  kAttnQ = 0,  // packed: qkv
  kAttnK = 1,
  kAttnV = 2,
  kAttnKeep = 3,
  kAttnValidLens = 4,
  kAttnBias = 5,
  kAttnOut = 6,
  kAttnDOut = 7,
};

// HeadsOperand locates element d of head h at position l of batch b at
// offset + b * batch + h * head + l * row + d: a head's Dh elements are
// contiguous in every layout.
struct HeadsOperand {
  int64_t offset = 0, batch = 0, head = 0, row = 0;
  DAGRAD_HOST_DEVICE int64_t At(int64_t b, int64_t h, int64_t l) const {
    return offset + b * batch + h * head + l * row;
  }
};

// MaskStrides are a mask's element strides over the scores (B, H, T, S), 0
// along broadcast axes; `has` is false when the mask is absent.
struct MaskStrides {
  bool has = false;
  int64_t b = 0, h = 0, t = 0, s = 0;
  DAGRAD_HOST_DEVICE int64_t At(int64_t bi, int64_t hi, int64_t ti) const {
    return bi * b + hi * h + ti * t;
  }
};

struct AttentionLayout {
  int64_t B = 0, H = 0, T = 0, S = 0, Dh = 0;
  bool packed = false;
  HeadsOperand q, k, v;  // in inputs 0, 1, 2 (packed: all three in input 0)
  HeadsOperand out;      // the output and its gradient, (B, T, H * Dh)
  // attention_grad's flat output: dq in q's layout (packed: d(qkv)) from
  // element 0, dk and dv in k's and v's from dk_offset and dv_offset (0
  // when packed: k and v's own offsets place them), dbias (B, H, T, S)
  // from dbias_offset when bias_grad; grad_elements in all.
  int64_t dk_offset = 0, dv_offset = 0, dbias_offset = 0, grad_elements = 0;
  bool bias_grad = false;
  MaskStrides keep, bias;
  bool lens = false, lens_2d = false;  // valid lengths (B) or (B, T)
  bool causal = false;
  int64_t causal_offset = 0;
  double scale = 1.0, dropout = 0.0;

  // Limit is query t's key limit in batch b: keys >= it are masked by the
  // valid length (lens: int64, null when absent) or the causal mask.
  DAGRAD_HOST_DEVICE int64_t Limit(int64_t b, int64_t t, const int64_t* lens_data) const {
    int64_t n = S;
    if (lens_data != nullptr) {
      const int64_t len = lens_data[lens_2d ? b * T + t : b];
      n = len < n ? len : n;
    }
    if (causal && causal_offset < S) {
      const int64_t c = t + causal_offset + 1;
      n = c < 0 ? 0 : c < n ? c : n;
    }
    return n;
  }
  // WeightsRow is the flat index of weight (b, h, t, 0) of the (B, H, T, S)
  // softmax weights: attention dropout's element numbering.
  DAGRAD_HOST_DEVICE int64_t WeightsRow(int64_t b, int64_t h, int64_t t) const {
    return ((b * H + h) * T + t) * S;
  }
};

// ResolveAttention returns the layout of q, k, v (k, v null: packed) and
// the output under `attrs` ("heads", "packed", "scale", "causal",
// "causal_offset", "dropout"), without masks; InvalidArgument for operands
// that do not fit (ops/attention.h lists them).
absl::StatusOr<AttentionLayout> ResolveAttention(const Attrs& attrs, const Shape& q,
                                                 const Shape* k, const Shape* v);

// AttentionLayoutOf is ResolveAttention of a kernel's node with its masks'
// strides and, for attention_grad, where its gradients go.
absl::StatusOr<AttentionLayout> AttentionLayoutOf(const KernelContext& ctx);

}  // namespace dagrad

#endif  // DAGRAD_OPS_INTERNAL_ATTENTION_LAYOUT_H_
