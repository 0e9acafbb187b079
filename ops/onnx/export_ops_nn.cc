// Exporters of matmul, linear, layer_norm, the softmaxes, gelu and fused
// attention.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/onnx/export_ops.h"

namespace dagrad::onnx_export {
namespace {

// SwapLast transposes the last two axes of a value of rank `rank`.
std::string SwapLast(OnnxBuilder& b, const std::string& x, int rank) {
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  onnx::NodeProto* t = b.AddNode("Transpose", {x}, "");
  SetAttr(t, "perm", perm);
  return t->output(0);
}

// Widened is input `i` cast to the node's dtype when it differs: a product
// of bfloat16 or float16 operands accumulates and ends in float32, as
// MatMul of float32 operands, exact widenings of theirs, does.
std::string Widened(OnnxBuilder& b, const Node& node, int i) {
  const std::string in = b.In(node, i);
  return b.graph().node(node.inputs[i]).dtype == node.dtype ? in : b.Cast(in, node.dtype);
}

absl::Status ExportMatMul(OnnxBuilder& b, const Node& node) {
  std::string x = Widened(b, node, 0), y = Widened(b, node, 1);
  const int ra = b.graph().node(node.inputs[0]).shape.rank();
  const int rb = b.graph().node(node.inputs[1]).shape.rank();
  if (node.attrs.GetBool("transpose_a") && ra >= 2) x = SwapLast(b, x, ra);
  if (node.attrs.GetBool("transpose_b") && rb >= 2) y = SwapLast(b, y, rb);
  b.Add("MatMul", {x, y}, b.Out(node));
  return absl::OkStatus();
}

// linear(x, w, b) = x w^T + b, w (out, in) as PyTorch stores it.
absl::Status ExportLinear(OnnxBuilder& b, const Node& node) {
  const std::string wt = SwapLast(b, Widened(b, node, 1), 2), x = Widened(b, node, 0);
  if (!b.Has(node, 2)) {
    b.Add("MatMul", {x, wt}, b.Out(node));
    return absl::OkStatus();
  }
  b.Add("Add", {b.Add("MatMul", {x, wt}), Widened(b, node, 2)}, b.Out(node));
  return absl::OkStatus();
}

// layer_norm over the last axis; ONNX needs a scale, so an absent gamma is ones.
absl::Status ExportLayerNorm(OnnxBuilder& b, const Node& node) {
  std::string gamma = b.In(node, 1);
  if (gamma.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor ones,
                            FilledTensor(1.0, node.dtype, Shape({node.shape.dims().back()})));
    gamma = b.Initializer(ones, b.Fresh("ones"));
  }
  onnx::NodeProto* norm =
      b.AddNode("LayerNormalization", {b.In(node, 0), gamma, b.In(node, 2)}, b.Out(node));
  SetAttr(norm, "axis", int64_t{-1});
  SetAttr(norm, "epsilon", static_cast<float>(node.attrs.GetFloat("eps")));
  return absl::OkStatus();
}

// MaskInputs says where a softmax's masks are: the scores' ONNX value and
// rank, and the node's inputs holding keep, valid_lens and bias (masked
// softmax's own, ops/softmax.cc, or fused attention's, ops/attention.h).
struct MaskInputs {
  std::string scores;
  int rank;
  int keep, valid_lens, bias;
};

// AxisSize returns axis `axis` of x's run-time shape as an int64 scalar.
std::string AxisSize(OnnxBuilder& b, const std::string& x, int axis) {
  onnx::NodeProto* shape = b.AddNode("Shape", {x}, "");
  SetAttr(shape, "start", int64_t{axis});
  SetAttr(shape, "end", int64_t{axis + 1});
  return b.Add("Squeeze", {shape->output(0)});
}

std::string Range(OnnxBuilder& b, const std::string& start, const std::string& limit) {
  return b.Add("Range", {start, limit, b.Scalar(1, DType::kInt64)});
}

// ValidLensKeep: key k is kept iff k < valid_lens[b] (or [b, q]), shaped
// to broadcast over the scores (..., Q, K).
std::string ValidLensKeep(OnnxBuilder& b, const Node& node, const MaskInputs& m,
                          const std::string& keys) {
  const Node& lens = b.graph().node(node.inputs[m.valid_lens]);
  std::string l = b.In(node, m.valid_lens);
  if (lens.dtype != DType::kInt64) l = b.Cast(l, DType::kInt64);
  std::vector<int64_t> axes;  // (B) -> (B, 1, ..., 1); (B, Q) -> (B, 1, ..., Q, 1)
  for (int a = 1; a < m.rank - (lens.shape.rank() == 2 ? 2 : 0); ++a) axes.push_back(a);
  if (lens.shape.rank() == 2) axes.push_back(m.rank - 1);
  return b.Add("Less", {keys, b.Add("Unsqueeze", {l, b.Ints(axes)})});
}

// CausalKeep: key k is kept for query q iff k <= q + causal_offset, (Q, K).
std::string CausalKeep(OnnxBuilder& b, const Node& node, const MaskInputs& m,
                       const std::string& keys) {
  const int64_t offset = node.attrs.GetInt("causal_offset");
  const std::string q = AxisSize(b, m.scores, m.rank - 2);
  const std::string first = b.Scalar(offset + 1, DType::kInt64);
  const std::string limits =
      Range(b, first, b.Add("Add", {q, first}));  // q + offset + 1 for each q
  return b.Add("Less", {keys, b.Add("Unsqueeze", {limits, b.Ints({1})})});
}

// KeepMask returns the bool mask of kept positions, broadcasting to the
// scores, or "" when nothing is masked.
std::string KeepMask(OnnxBuilder& b, const Node& node, const MaskInputs& m) {
  std::vector<std::string> masks;
  if (b.Has(node, m.keep)) masks.push_back(b.In(node, m.keep));
  const bool causal = node.attrs.GetBool("causal");
  if (b.Has(node, m.valid_lens) || causal) {
    const std::string k = AxisSize(b, m.scores, m.rank - 1);
    const std::string keys = Range(b, b.Scalar(0, DType::kInt64), k);
    if (b.Has(node, m.valid_lens)) masks.push_back(ValidLensKeep(b, node, m, keys));
    if (causal) masks.push_back(CausalKeep(b, node, m, keys));
  }
  if (masks.empty()) return "";
  std::string keep = masks[0];
  for (size_t i = 1; i < masks.size(); ++i) keep = b.Add("And", {keep, masks[i]});
  return keep;
}

// MaskedSoftmax writes softmax(scale * scores + bias) over the kept
// positions to `out`: masked positions are -inf before Softmax, and a row
// whose every position is -inf (masked, or by a -inf bias) is zeros as in
// dagrad, where ONNX's Softmax gives NaN.
void MaskedSoftmax(OnnxBuilder& b, const Node& node, const MaskInputs& m, std::string out) {
  std::string z = m.scores;
  const double scale = node.attrs.GetFloat("scale", 1.0);
  if (scale != 1.0) z = b.Add("Mul", {z, b.Scalar(scale, node.dtype)});
  if (b.Has(node, m.bias)) z = b.Add("Add", {z, b.In(node, m.bias)});
  const std::string keep = KeepMask(b, node, m);
  const std::string minus_inf = b.Scalar(-std::numeric_limits<double>::infinity(), node.dtype);
  if (!keep.empty()) z = b.Add("Where", {keep, z, minus_inf});
  const bool may_die = !keep.empty() || b.Has(node, m.bias);
  onnx::NodeProto* softmax = b.AddNode("Softmax", {z}, may_die ? "" : out);
  SetAttr(softmax, "axis", int64_t{-1});
  if (!may_die) return;
  onnx::NodeProto* row_max = b.AddNode("ReduceMax", {z}, "");
  SetAttr(row_max, "axes", std::vector<int64_t>{-1});
  SetAttr(row_max, "keepdims", int64_t{1});
  const std::string dead = b.Add("Equal", {row_max->output(0), minus_inf});
  b.Add("Where", {dead, b.Scalar(0, node.dtype), softmax->output(0)}, out);
}

// masked softmax's inputs (ops/softmax.cc): scores, keep, valid_lens, bias.
absl::Status ExportMaskedSoftmax(OnnxBuilder& b, const Node& node) {
  MaskedSoftmax(b, node, {b.In(node, 0), node.shape.rank(), 1, 2, 3}, b.Out(node));
  return absl::OkStatus();
}

// Heads returns input i of fused attention as (B, H, L, Dh): as it is when
// it has that layout, else (B, L, H * Dh) reshaped and transposed. `x`
// overrides the value (packed attention's slices).
std::string Heads(OnnxBuilder& b, const Node& node, int i, const std::string& x) {
  if (b.graph().node(node.inputs[i]).shape.rank() == 4) return x;
  const int64_t H = node.attrs.GetInt("heads", 1);
  const std::string split = b.Add("Reshape", {x, b.Ints({0, 0, H, -1})});
  onnx::NodeProto* t = b.AddNode("Transpose", {split}, "");
  SetAttr(t, "perm", std::vector<int64_t>{0, 2, 1, 3});
  return t->output(0);
}

// Fused attention (ops/attention.h) as the subgraph it fuses: q·kᵀ, the
// masked softmax (dropout is the identity at inference), · v, and the heads
// merged, (B, H, T, Dh) -> (B, T, H * Dh).
absl::Status ExportAttention(OnnxBuilder& b, const Node& node) {
  std::string q = b.In(node, 0), k, v;
  if (node.attrs.GetBool("packed")) {
    const int64_t E = node.shape.dims().back();
    auto part = [&](int64_t j) {
      return b.Add("Slice", {q, b.Ints({j * E}), b.Ints({(j + 1) * E}), b.Ints({2})});
    };
    k = Heads(b, node, 0, part(1));
    v = Heads(b, node, 0, part(2));
    q = Heads(b, node, 0, part(0));
  } else {
    k = Heads(b, node, 1, b.In(node, 1));
    v = Heads(b, node, 2, b.In(node, 2));
    q = Heads(b, node, 0, q);
  }
  const std::string scores = b.Add("MatMul", {q, SwapLast(b, k, 4)});
  const std::string weights = b.Fresh("weights");
  MaskedSoftmax(b, node, {scores, 4, 3, 4, 5}, weights);
  onnx::NodeProto* merge = b.AddNode("Transpose", {b.Add("MatMul", {weights, v})}, "");
  SetAttr(merge, "perm", std::vector<int64_t>{0, 2, 1, 3});
  b.Add("Reshape", {merge->output(0), b.Ints({0, 0, -1})}, b.Out(node));
  return absl::OkStatus();
}

absl::Status ExportLogSoftmax(OnnxBuilder& b, const Node& node) {
  SetAttr(b.AddNode("LogSoftmax", {b.In(node, 0)}, b.Out(node)), "axis", int64_t{-1});
  return absl::OkStatus();
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), or with tanh
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))); opset 17 has no Gelu.
absl::Status ExportGelu(OnnxBuilder& b, const Node& node) {
  const std::string x = b.In(node, 0);
  const DType t = node.dtype;
  std::string inner;
  if (node.attrs.GetStr("approximate") == "tanh") {
    const std::string cube = b.Add("Mul", {b.Add("Mul", {x, x}), x});
    const std::string sum = b.Add("Add", {x, b.Add("Mul", {cube, b.Scalar(0.044715, t)})});
    inner = b.Add("Tanh", {b.Add("Mul", {sum, b.Scalar(std::sqrt(2.0 / M_PI), t)})});
  } else {
    inner = b.Add("Erf", {b.Add("Mul", {x, b.Scalar(M_SQRT1_2, t)})});
  }
  const std::string half_x = b.Add("Mul", {x, b.Scalar(0.5, t)});
  b.Add("Mul", {half_x, b.Add("Add", {inner, b.Scalar(1.0, t)})}, b.Out(node));
  return absl::OkStatus();
}

}  // namespace

OnnxExporterList NnExporters() {
  return {{"matmul", ExportMatMul},        {"linear", ExportLinear},
          {"layer_norm", ExportLayerNorm}, {"softmax", ExportMaskedSoftmax},
          {"log_softmax", ExportLogSoftmax}, {"gelu", ExportGelu},
          {"attention", ExportAttention}};
}

}  // namespace dagrad::onnx_export
