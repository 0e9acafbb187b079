// Fused attention (ops/attention.h): shape inference, the gradient rule,
// the OpDefs of attention and its backward attention_grad, and the
// builders. The kernels are ops/attention_cpu*.cc (CPU) and
// ops/cuda/attention.cu.
//
// Why an OpDef, not a builder over matmul, masked softmax and dropout
// (ops/registry.h): speed and memory. The composed subgraph writes and
// reads (B, H, T, S) scores, weights and dropped weights, forward and
// backward, and permutes the heads in and out; the fused op keeps one
// block of scores per thread and reads q, k, v where the projection put
// them.

#include "ops/attention.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/dropout.h"
#include "ops/internal/attention_cpu.h"
#include "ops/internal/attention_layout.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

// InferLayout checks the forward's inputs (q, k, v, masks and attributes)
// and returns their layout.
absl::StatusOr<AttentionLayout> InferLayout(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, kAttnQ, "q"));
  for (int i : {kAttnK, kAttnV}) {
    if (ctx.has(i)) DAGRAD_RETURN_IF_ERROR(RequireSameDType(ctx, kAttnQ, i));
  }
  auto input = [&](int i) { return ctx.has(i) ? &ctx.in(i) : nullptr; };
  auto shape = [&](int i) { return ctx.has(i) ? &ctx.in(i).shape : nullptr; };
  DAGRAD_ASSIGN_OR_RETURN(
      AttentionLayout a, ResolveAttention(ctx.attrs, ctx.in(kAttnQ).shape, shape(kAttnK),
                                          shape(kAttnV)));
  DAGRAD_RETURN_IF_ERROR(ValidateSoftmaxMask(Shape({a.B, a.H, a.T, a.S}),
                                             ctx.in(kAttnQ).dtype, input(kAttnKeep),
                                             input(kAttnValidLens), input(kAttnBias),
                                             ctx.attrs));
  DAGRAD_RETURN_IF_ERROR(ValidateDropout(a.dropout));
  return a;
}

absl::StatusOr<TensorType> InferAttention(const InferContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const AttentionLayout a, InferLayout(ctx));
  return TensorType{ctx.in(kAttnQ).dtype, Shape({a.B, a.T, a.H * a.Dh})};
}

// attention_grad(q, k, v, keep, valid_lens, bias, out, dout): the forward's
// inputs, output and the output's gradient -> every gradient, flat.
absl::StatusOr<TensorType> InferAttentionGrad(const InferContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const AttentionLayout a, InferLayout(ctx));
  const Shape out({a.B, a.T, a.H * a.Dh});
  for (int i : {kAttnOut, kAttnDOut}) {
    DAGRAD_RETURN_IF_ERROR(RequireSameDType(ctx, kAttnQ, i));
    if (ctx.in(i).shape != out) {
      return absl::InvalidArgumentError(
          absl::StrCat("the output and its gradient must be ", out.ToString(), ", got ",
                       ctx.in(i).shape.ToString()));
    }
  }
  const int64_t dbias = ctx.attrs.GetBool("bias_grad") ? a.B * a.H * a.T * a.S : 0;
  return TensorType{ctx.in(kAttnQ).dtype, Shape({a.grad_elements + dbias})};
}

// PackedPiece returns elements [offset, offset + shape's) of the flat gradient
// buffer as `shape`: a slice of a 1-D buffer and a reshape, both views.
Value PackedPiece(Value all, int64_t offset, const Shape& shape) {
  const Dims& dims = shape.dims();
  return Reshape(Slice(all, 0, offset, offset + shape.num_elements()),
                 std::vector<int64_t>(dims.begin(), dims.end()));
}

Value AttentionGrad(const GradContext& c, bool bias_grad);

// out = merge(dropout(softmax(scale · q·kᵀ + bias)) · v), fused: one
// attention_grad node computes dq, dk, dv (packed: d(qkv)) and, when the
// bias needs one, dbias = dS, each a view of its flat output. dbias has
// the scores' shape (B, H, T, S); autodiff sums it to the bias's.
std::vector<Value> AttentionBackward(const GradContext& c) {
  const bool bias_grad = c.needs[kAttnBias];
  const Value all = AttentionGrad(c, bias_grad);
  std::vector<Value> grads(c.inputs.size());
  int64_t offset = 0;
  for (int i : {kAttnQ, kAttnK, kAttnV}) {
    if (c.inputs[i].is_null()) continue;
    const Shape& shape = c.inputs[i].shape();
    if (c.needs[i]) grads[i] = PackedPiece(all, offset, shape);
    offset += shape.num_elements();
  }
  if (bias_grad) {
    const int64_t H = c.attrs().GetInt("heads", 1);
    const Shape& q = c.inputs[kAttnQ].shape();
    const Value& k = c.inputs[kAttnK];
    const int64_t S = k.is_null() ? q[1] : k.rank() == 3 ? k.dim(1) : k.dim(2);
    grads[kAttnBias] = PackedPiece(all, offset, Shape({q[0], H, c.output.dim(1), S}));
  }
  return grads;
}

const OpDef kAttention = {.name = "attention",
                          .dot_label = "Attention",
                          .infer = InferAttention,
                          .cpu = AttentionCpu,
                          .grad = AttentionBackward,
                          .nondiff_inputs = 1u << kAttnKeep | 1u << kAttnValidLens,
                          .random = true,
                          .onnx = kOnnxExporter};

// attention_grad has no rule: second derivatives through the fused op are
// Unimplemented (the composed subgraph has them).
const OpDef kAttentionGrad = {.name = "attention_grad",
                              .dot_label = "Attention'",
                              .infer = InferAttentionGrad,
                              .cpu = AttentionGradCpu,
                              .nondiff_inputs = 1u << kAttnKeep | 1u << kAttnValidLens,
                              .random = true,
                              .onnx = NoOnnx("a backward op, not in inference graphs")};

// The backward carries the forward's dropout stream, so it redraws the
// forward's mask.
Value AttentionGrad(const GradContext& c, bool bias_grad) {
  Attrs attrs = c.attrs();
  attrs.Int("stream", c.node.RandomStream());
  if (bias_grad) attrs.Bool("bias_grad", true);
  std::vector<Value> inputs = c.inputs;
  inputs.push_back(c.output);
  inputs.push_back(c.grad);
  return BuildOp(kAttentionGrad, inputs, std::move(attrs), /*optional=*/0b111110);
}

Value BuildAttention(Value q, Value k, Value v, const SoftmaxMask& mask,
                     const AttentionOptions& options, bool packed) {
  // Only non-default attributes are set, so DOT labels stay short.
  Attrs attrs;
  attrs.Int("heads", options.heads);
  if (packed) attrs.Bool("packed", true);
  if (options.scale != 1.0) attrs.Float("scale", options.scale);
  if (mask.causal) {
    attrs.Bool("causal", true);
    if (mask.causal_offset != 0) attrs.Int("causal_offset", mask.causal_offset);
  }
  if (options.dropout != 0.0) attrs.Float("dropout", options.dropout);
  return BuildOp(kAttention, {q, k, v, mask.keep, mask.valid_lens, mask.bias}, std::move(attrs),
                 /*optional=*/packed ? 0b111110 : 0b111000);
}

}  // namespace

DAGRAD_REGISTER_OP(kAttention, attention);
DAGRAD_REGISTER_OP(kAttentionGrad, attention_grad);

Value Attention(Value q, Value k, Value v, const SoftmaxMask& mask,
                const AttentionOptions& options) {
  return BuildAttention(q, k, v, mask, options, /*packed=*/false);
}

Value PackedAttention(Value qkv, const SoftmaxMask& mask, const AttentionOptions& options) {
  return BuildAttention(qkv, Value(), Value(), mask, options, /*packed=*/true);
}

}  // namespace dagrad
