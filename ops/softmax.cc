// Softmax family: masked softmax (keep mask, valid lengths, causal, bias and
// scale fused into one pass per row), its backward op softmax_grad, and
// log_softmax. Each op reads top to bottom: shape inference, CPU kernel,
// gradient rule, OpDef, builder.
//
// The kernels work on rows of the last axis, split over threads. Each row is
// a few simple loops over contiguous memory (scale and bias, mask, max,
// exp-and-sum, normalise) rather than one loop with branches, so that the
// compiler vectorises each; the float exp-and-sum is the active ISA level's
// kernel (ops/cpu/kernels/row_kernels.cc). Positions cut off by a valid
// length or the causal limit form the row's tail: it is zeroed, never
// exponentiated.

#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/status_macros.h"
#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

// masked_softmax's inputs.
enum SoftmaxInput { kScores = 0, kKeep = 1, kValidLens = 2, kBias = 3 };

// LeadingRows is the number of rows of the last axis: the product of all
// other dims (1 for a vector), also when the last axis is empty.
int64_t LeadingRows(const Shape& s) {
  int64_t rows = 1;
  for (int d = 0; d + 1 < s.rank(); ++d) rows *= s[d];
  return rows;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ReadValidLens(const TensorRef& lens, int64_t k) {
  std::vector<int64_t> out(lens.num_elements());
  DAGRAD_RETURN_IF_ERROR(DispatchIndex(lens.dtype, [&](auto tag) {
    using I = decltype(tag);
    const I* v = lens.as<I>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(v[i]);
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0 || out[i] > k) {
      const std::string pos = lens.rank() == 1
                                  ? absl::StrCat(i)
                                  : absl::StrCat(i / lens.dim(1), ", ", i % lens.dim(1));
      return absl::InvalidArgumentError(
          absl::StrCat("valid_lens[", pos, "] = ", out[i], " is outside [0, ", k,
                       "] (K = ", k, ", the size of the scores' last axis)"));
    }
  }
  return out;
}

absl::Status ValidateSoftmaxMask(const Shape& s, DType dtype, const TensorType* keep,
                                 const TensorType* valid_lens, const TensorType* bias,
                                 const Attrs& attrs) {
  const int rank = s.rank();
  if (keep != nullptr) {
    if (keep->dtype != DType::kBool) {
      return absl::InvalidArgumentError(absl::StrCat(
          "keep mask must be bool (true = keep), got ", DTypeName(keep->dtype), " ",
          keep->shape.ToString()));
    }
    if (!IsBroadcastableTo(keep->shape, s)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "keep mask ", keep->shape.ToString(), " does not broadcast to scores ", s.ToString()));
    }
  }
  if (valid_lens != nullptr) {
    const Shape& lens = valid_lens->shape;
    if (!IsInteger(valid_lens->dtype)) {
      return absl::InvalidArgumentError(absl::StrCat("valid_lens must be int32 or int64, got ",
                                                     DTypeName(valid_lens->dtype)));
    }
    const bool one_d = lens.rank() == 1 && rank >= 2 && lens[0] == s[0];
    const bool two_d =
        lens.rank() == 2 && rank >= 3 && lens[0] == s[0] && lens[1] == s[rank - 2];
    if (!one_d && !two_d) {
      return absl::InvalidArgumentError(absl::StrCat(
          "valid_lens ", lens.ToString(), " must be (B) = (", rank >= 2 ? s[0] : 0,
          ",) for scores ", s.ToString(),
          rank >= 3 ? absl::StrCat(", or (B, Q) = (", s[0], ", ", s[rank - 2], ")") : "",
          rank < 2 ? "; valid_lens need scores of rank >= 2" : ""));
    }
  }
  if (bias != nullptr) {
    if (bias->dtype != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("bias must be ", DTypeName(dtype),
                                                     " like scores, got ",
                                                     DTypeName(bias->dtype), " ",
                                                     bias->shape.ToString()));
    }
    if (!IsBroadcastableTo(bias->shape, s)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bias ", bias->shape.ToString(), " does not broadcast to scores ", s.ToString()));
    }
  }
  if (attrs.GetBool("causal") && rank < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a causal mask needs scores of rank >= 2 (..., Q, K), got ", s.ToString()));
  }
  if (!std::isfinite(attrs.GetFloat("scale", 1.0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("scale must be finite, got ", attrs.GetFloat("scale", 1.0)));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// softmax(scale * scores + bias) over the kept positions of the last axis.

namespace {

absl::StatusOr<TensorType> InferMaskedSoftmax(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, kScores, "scores"));
  const Shape& s = ctx.in(kScores).shape;
  if (s.rank() < 1) {
    return absl::InvalidArgumentError(
        "scores must have rank >= 1 (softmax runs over the last axis), got ()");
  }
  auto input = [&](int i) { return ctx.has(i) ? &ctx.in(i) : nullptr; };
  DAGRAD_RETURN_IF_ERROR(ValidateSoftmaxMask(s, ctx.in(kScores).dtype, input(kKeep),
                                             input(kValidLens), input(kBias), ctx.attrs));
  return ctx.in(kScores);
}

// RowOffset maps a row (a flat index over scores' leading axes) to an
// element offset in an input broadcast through `strides`.
int64_t RowOffset(int64_t row, const Shape& s, const Dims& strides) {
  int64_t off = 0;
  for (int d = s.rank() - 2; d >= 0; --d) {
    off += row % s[d] * strides[d];
    row /= s[d];
  }
  return off;
}

// ScaleAndBias writes y[k] = scale * x[k] + bias for k < n, where bias is
// none (null), one value for the whole row (row_bias) or a row of its own.
// y may alias x (in place): each loop reads x[k] before writing y[k].
template <typename T>
void ScaleAndBias(const T* x, T* y, int64_t n, T scale, const T* bias, bool row_bias) {
  if (bias == nullptr) {
    for (int64_t k = 0; k < n; ++k) y[k] = scale * x[k];
  } else if (row_bias) {
    const T b = *bias;
    for (int64_t k = 0; k < n; ++k) y[k] = scale * x[k] + b;
  } else {
    for (int64_t k = 0; k < n; ++k) y[k] = scale * x[k] + bias[k];
  }
}

// ApplyKeep sets y[k] = -inf where keep[k] is false (k < n) and returns the
// row's unmasked prefix: n, or 0 when one flag (one_flag) masks the row.
template <typename T>
int64_t ApplyKeep(const bool* keep, bool one_flag, T* y, int64_t n) {
  if (one_flag) return keep[0] ? n : 0;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  // Read the bools as bytes: GCC finds no vector type for bool.
  const auto* kb = reinterpret_cast<const unsigned char*>(keep);
  for (int64_t k = 0; k < n; ++k) y[k] = kb[k] ? y[k] : kNegInf;
  return n;
}

template <typename T>
absl::Status MaskedSoftmaxTyped(const KernelContext& ctx) {
  const Shape& s = *ctx.in(kScores).shape;
  const int rank = s.rank();
  const int64_t kk = s[rank - 1];
  const int64_t rows = LeadingRows(s);
  const int64_t q_size = rank >= 2 ? s[rank - 2] : 1;
  const int64_t rows_per_b = rank >= 2 && s[0] > 0 ? rows / s[0] : rows;
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  const T scale = static_cast<T>(ctx.attrs().GetFloat("scale", 1.0));
  const bool causal = ctx.attrs().GetBool("causal");
  const int64_t offset = ctx.attrs().GetInt("causal_offset");

  std::vector<int64_t> lens;
  const bool has_lens = ctx.has(kValidLens);
  const bool lens_2d = has_lens && ctx.in(kValidLens).rank() == 2;
  if (has_lens) {
    DAGRAD_ASSIGN_OR_RETURN(lens, ReadValidLens(ctx.in(kValidLens), kk));
  }

  const bool* keep = ctx.has(kKeep) ? ctx.in(kKeep).as<bool>() : nullptr;
  const T* bias = ctx.has(kBias) ? ctx.in(kBias).as<T>() : nullptr;
  const Dims keep_strides = keep ? BroadcastStrides(*ctx.in(kKeep).shape, s) : Dims();
  const Dims bias_strides = bias ? BroadcastStrides(*ctx.in(kBias).shape, s) : Dims();
  const T* x = ctx.in(kScores).as<T>();
  T* out = ctx.output.as<T>();
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();

  ParallelFor(rows, RowGrain(kk), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t q = row % q_size;
      // n: the row's unmasked prefix; positions past it are the tail.
      int64_t n = kk;
      const int64_t b = row / rows_per_b;
      if (has_lens) n = std::min(n, lens[lens_2d ? b * q_size + q : b]);
      if (causal) n = std::min(n, offset >= kk ? kk : std::max<int64_t>(0, q + offset + 1));
      T* y = out + row * kk;
      const T* br = bias == nullptr ? nullptr : bias + RowOffset(row, s, bias_strides);
      ScaleAndBias(x + row * kk, y, n, scale, br, bias != nullptr && bias_strides[rank - 1] == 0);
      if (keep != nullptr) {
        n = ApplyKeep(keep + RowOffset(row, s, keep_strides), keep_strides[rank - 1] == 0, y, n);
      }
      // A NaN anywhere in the kept positions makes m NaN and the row NaN,
      // as in torch; masked positions are -inf, not NaN, so a fully masked
      // row still has m = -inf.
      const T m = RowMax(y, n);
      if (m == kNegInf) n = 0;  // every position masked: the row is zeros
      if (n > 0) {
        const T inv = static_cast<T>(1.0 / ExpShiftSum(*kernels, y, y, n, m));
        for (int64_t k = 0; k < n; ++k) y[k] *= inv;
      }
      std::fill(y + n, y + kk, T(0));
    }
  });
  return absl::OkStatus();
}

absl::Status MaskedSoftmaxKernel(const KernelContext& ctx) {
  if (ctx.output.num_elements() == 0) return absl::OkStatus();  // rows of nothing: no loop
  return DispatchFloat(ctx.output.dtype,
                       [&](auto tag) { return MaskedSoftmaxTyped<decltype(tag)>(ctx); });
}

// z = scale * scores + bias and y = softmax(z) over the kept positions:
// dL/dz = softmax_grad(y, g), zero wherever y is (masked positions, fully
// masked rows). keep and valid_lens are non-differentiable inputs.
std::vector<Value> MaskedSoftmaxBackward(const GradContext& c) {
  const Value dz = SoftmaxGrad(c.output, c.grad);
  const double scale = c.attrs().GetFloat("scale", 1.0);
  Value dscores;
  if (c.needs[kScores]) dscores = scale == 1.0 ? dz : dz * scale;
  return {dscores, Value(), Value(), c.needs[kBias] ? dz : Value()};
}

const OpDef kMaskedSoftmax = {.name = "softmax",
                              .dot_label = "Softmax",
                              .infer = InferMaskedSoftmax,
                              .cpu = MaskedSoftmaxKernel,
                              .grad = MaskedSoftmaxBackward,
                              .nondiff_inputs = 1u << kKeep | 1u << kValidLens,
                              .inplace = true,
                              .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kMaskedSoftmax, softmax);

Value MaskedSoftmax(Value scores, const SoftmaxMask& mask, double scale) {
  // Only non-default attributes are set, so DOT labels stay short.
  Attrs attrs;
  if (scale != 1.0) attrs.Float("scale", scale);
  if (mask.causal) {
    attrs.Bool("causal", true);
    if (mask.causal_offset != 0) attrs.Int("causal_offset", mask.causal_offset);
  }
  return BuildOp(kMaskedSoftmax, {scores, mask.keep, mask.valid_lens, mask.bias},
                 std::move(attrs), /*optional=*/0b1110);
}

Value Softmax(Value x) { return MaskedSoftmax(x); }

// ---------------------------------------------------------------------------
// softmax_grad(y, g) = y * (g - sum(g * y, -1)), softmax's backward op.

namespace {

// softmax_grad's node inputs are (g, y).
absl::StatusOr<TensorType> InferSoftmaxGrad(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 1, "y"));
  DAGRAD_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  if (ctx.in(0).shape != ctx.in(1).shape || ctx.in(0).shape.rank() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "y and g must have the same shape of rank >= 1, got y ", ctx.in(1).shape.ToString(),
        " and g ", ctx.in(0).shape.ToString()));
  }
  return ctx.in(0);
}

// softmax_grad: dx = y * (g - sum(g * y)); the output may alias g (input 0).
// float runs the active ISA level's kernel, double the same sums here.
absl::Status SoftmaxGradKernel(const KernelContext& ctx) {
  if (ctx.output.num_elements() == 0) return absl::OkStatus();
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const Shape& s = *ctx.in(0).shape;
    const int64_t kk = s[s.rank() - 1];
    const T* g = ctx.in(0).as<T>();
    const T* y = ctx.in(1).as<T>();
    T* dx = ctx.output.as<T>();
    DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
    ParallelFor(LeadingRows(s), RowGrain(kk), [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        const int64_t at = begin * kk;
        kernels->softmax_grad_f32(g + at, y + at, dx + at, end - begin, kk);
      } else {
        for (int64_t row = begin; row < end; ++row) {
          const T* gr = g + row * kk;
          const T* yr = y + row * kk;
          T* d = dx + row * kk;
          const T dot = static_cast<T>(
              SumLanes<16>(kk, [&](int64_t k) { return static_cast<double>(gr[k]) * yr[k]; }));
          for (int64_t k = 0; k < kk; ++k) d[k] = yr[k] * (gr[k] - dot);
        }
      }
    });
    return absl::OkStatus();
  });
}

// out = y * (g - s) with s = sum(g * y, -1). For an upstream gradient h:
//   dL/dg = y * (h - sum(h * y))            = softmax_grad(y, h)
//   dL/dy = h * (g - s) - g * sum(h * y)
// (d out_k / d y_i = [k == i] (g_k - s) - y_k g_i). Built from
// differentiable ops, so softmax has second (and third) derivatives.
std::vector<Value> SoftmaxGradBackward(const GradContext& c) {
  const Value g = c.inputs[0], y = c.inputs[1], h = c.grad;
  Value dg, dy;
  if (c.needs[0]) dg = SoftmaxGrad(y, h);
  if (c.needs[1]) {
    const Value s = Sum(g * y, {-1}, /*keepdims=*/true);
    const Value hy = Sum(h * y, {-1}, /*keepdims=*/true);
    dy = h * (g - s) - g * hy;
  }
  return {dg, dy};
}

const OpDef kSoftmaxGrad = {.name = "softmax_grad",
                            .dot_label = "Softmax'",
                            .infer = InferSoftmaxGrad,
                            .cpu = SoftmaxGradKernel,
                            .grad = SoftmaxGradBackward,
                            .inplace = true,
                            .onnx = NoOnnx("a backward op, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kSoftmaxGrad, softmax_grad);

Value SoftmaxGrad(Value y, Value g) { return BuildOp(kSoftmaxGrad, {g, y}); }

// ---------------------------------------------------------------------------
// log_softmax(x) = (x - max) - log(sum(exp(x - max), -1)).

namespace {

absl::StatusOr<TensorType> InferLogSoftmax(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "input"));
  if (ctx.in(0).shape.rank() < 1) {
    return absl::InvalidArgumentError(
        "input must have rank >= 1 (log_softmax runs over the last axis), got ()");
  }
  return ctx.in(0);
}

absl::Status LogSoftmaxKernel(const KernelContext& ctx) {
  if (ctx.output.num_elements() == 0) return absl::OkStatus();
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
    const Shape& s = *ctx.in(0).shape;
    const int64_t kk = s[s.rank() - 1];
    const T* x = ctx.in(0).as<T>();
    T* out = ctx.output.as<T>();
    ParallelFor(LeadingRows(s), RowGrain(kk), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T* xr = x + row * kk;
        T* y = out + row * kk;
        const T m = RowMax(xr, kk);
        // The terms are not stored: y may alias x (in place). (x - m) first,
        // as torch: x - (m + log(sum)) loses log(sum) beside an m of 3e38.
        // A row holding +inf is NaN throughout, as torch's (inf - inf).
        const double sum = ExpShiftSum<T>(*kernels, xr, nullptr, kk, m);
        const T log_sum = static_cast<T>(std::log(sum));
        for (int64_t k = 0; k < kk; ++k) y[k] = (xr[k] - m) - log_sum;
      }
    });
    return absl::OkStatus();
  });
}

// y = log_softmax(x): dL/dx = g - exp(y) * sum(g, -1).
std::vector<Value> LogSoftmaxBackward(const GradContext& c) {
  return {c.grad - Exp(c.output) * Sum(c.grad, {-1}, /*keepdims=*/true)};
}

const OpDef kLogSoftmax = {.name = "log_softmax",
                           .dot_label = "LogSoftmax",
                           .infer = InferLogSoftmax,
                           .cpu = LogSoftmaxKernel,
                           .grad = LogSoftmaxBackward,
                           .inplace = true,
                           .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kLogSoftmax, log_softmax);

Value LogSoftmax(Value x) { return BuildOp(kLogSoftmax, {x}); }

}  // namespace dagrad
