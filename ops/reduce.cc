// Reductions: sum, mean, max over any set of axes.
//
// Kernels see the input as (outer, reduced, inner) when the reduced axes are
// contiguous — the common cases (last axis, leading batch axes) — and fall
// back to an odometer over the reduced axes otherwise.

#include <algorithm>
#include <limits>

#include "ops/elementwise.h"
#include "ops/int_math.h"
#include "ops/op_util.h"
#include "ops/parallel.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

enum class Reduction { kSum, kMean, kMax };

Shape KeptShape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  Dims out;
  for (int i = 0; i < in.rank(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      out.push_back(in[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return Shape(out);
}

absl::StatusOr<TensorType> InferReduce(const InferContext& ctx) {
  if (ctx.in(0).dtype == DType::kBool) {
    return absl::InvalidArgumentError("cannot reduce bool; Cast it first");
  }
  auto axes = NormalizeAxes(ctx.attrs.GetInts("axes"), ctx.in(0).shape.rank());
  if (!axes.ok()) return axes.status();
  return TensorType{ctx.in(0).dtype,
                    KeptShape(ctx.in(0).shape, *axes, ctx.attrs.GetBool("keepdims"))};
}

// Mean is defined for floats only, as torch.mean.
absl::StatusOr<TensorType> InferMean(const InferContext& ctx) {
  if (!IsFloating(ctx.in(0).dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mean needs a float input, got ", DTypeName(ctx.in(0).dtype), "; Cast it first"));
  }
  return InferReduce(ctx);
}

template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// MaxIdentity starts a max: -inf for floats (so a row of -inf gives -inf,
// and an empty row too), lowest() for integers.
template <typename T>
T MaxIdentity() {
  if constexpr (std::is_floating_point_v<T>) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

template <typename T>
void ReduceContiguous(Reduction r, const T* x, T* y, int64_t outer, int64_t mid,
                      int64_t inner) {
  const bool is_max = r == Reduction::kMax;
  const double scale = r == Reduction::kMean && mid > 0 ? 1.0 / mid : 1.0;
  if (inner == 1) {
    ParallelFor(outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(mid, 1)),
                [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * mid;
        if (is_max) {
          T m = mid ? row[0] : MaxIdentity<T>();
          for (int64_t i = 1; i < mid; ++i) m = std::max(m, row[i]);
          y[o] = m;
        } else {
          Acc<T> s = 0;
          for (int64_t i = 0; i < mid; ++i) s = WrapAdd<Acc<T>>(s, row[i]);
          y[o] = std::is_integral_v<T> ? static_cast<T>(s) : static_cast<T>(s * scale);
        }
      }
    });
    return;
  }
  // Rows of `inner` elements accumulate into each output row.
  ParallelFor(outer * inner, 4096, [&](int64_t b, int64_t e) {
    for (int64_t o = b / inner; o * inner < e; ++o) {
      const int64_t j0 = std::max(b, o * inner) - o * inner;
      const int64_t j1 = std::min(e, (o + 1) * inner) - o * inner;
      T* out = y + o * inner;
      const T* in = x + o * mid * inner;
      for (int64_t j = j0; j < j1; ++j) {
        out[j] = mid ? in[j] : (is_max ? MaxIdentity<T>() : T(0));
      }
      for (int64_t m = 1; m < mid; ++m) {
        const T* src = in + m * inner;
        if (is_max) {
          for (int64_t j = j0; j < j1; ++j) out[j] = std::max(out[j], src[j]);
        } else {
          for (int64_t j = j0; j < j1; ++j) out[j] = WrapAdd(out[j], src[j]);
        }
      }
      if (scale != 1.0) {
        for (int64_t j = j0; j < j1; ++j) out[j] = static_cast<T>(out[j] * scale);
      }
    }
  });
}

template <typename T>
void ReduceGeneral(Reduction r, const T* x, T* y, const Shape& in,
                   const std::vector<int>& axes) {
  const Dims strides = RowMajorStrides(in);
  std::vector<int> kept;
  for (int i = 0; i < in.rank(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) kept.push_back(i);
  }
  int64_t count = 1;
  for (int a : axes) count *= in[a];
  int64_t outputs = 1;
  for (int k : kept) outputs *= in[k];
  ParallelFor(outputs, 64, [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(axes.size());
    for (int64_t o = b; o < e; ++o) {
      int64_t base = 0, rem = o;
      for (int i = static_cast<int>(kept.size()) - 1; i >= 0; --i) {
        base += rem % in[kept[i]] * strides[kept[i]];
        rem /= in[kept[i]];
      }
      std::fill(idx.begin(), idx.end(), 0);
      Acc<T> s = 0;
      T m = MaxIdentity<T>();
      for (int64_t n = 0; n < count; ++n) {
        int64_t off = base;
        for (size_t a = 0; a < axes.size(); ++a) off += idx[a] * strides[axes[a]];
        if (r == Reduction::kMax) {
          m = std::max(m, x[off]);
        } else {
          s = WrapAdd<Acc<T>>(s, x[off]);
        }
        for (int a = static_cast<int>(axes.size()) - 1; a >= 0; --a) {
          if (++idx[a] < in[axes[a]]) break;
          idx[a] = 0;
        }
      }
      y[o] = r == Reduction::kMax               ? m
             : r == Reduction::kMean && count > 0 ? static_cast<T>(s / static_cast<double>(count))
                                                  : static_cast<T>(s);
    }
  });
}

template <Reduction R>
absl::Status ReduceKernel(const KernelContext& ctx) {
  const Shape& in = *ctx.in(0).shape;
  auto axes = NormalizeAxes(ctx.attrs().GetInts("axes"), in.rank());
  if (!axes.ok()) return axes.status();
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return absl::InternalError("reduce of bool");
    } else {
      const T* x = ctx.in(0).as<T>();
      T* y = ctx.output.as<T>();
      const bool contiguous = axes->empty() || axes->back() - axes->front() + 1 ==
                                                   static_cast<int>(axes->size());
      if (contiguous) {
        int64_t outer = 1, mid = 1, inner = 1;
        for (int i = 0; i < in.rank(); ++i) {
          if (!axes->empty() && i < axes->front()) outer *= in[i];
          else if (!axes->empty() && i > axes->back()) inner *= in[i];
          else mid *= in[i];
        }
        ReduceContiguous<T>(R, x, y, outer, mid, inner);
      } else {
        ReduceGeneral<T>(R, x, y, in, *axes);
      }
      return absl::OkStatus();
    }
  });
}

// The gradient of a reduction broadcasts g back over the reduced axes.
Value Unreduce(const GradContext& c, Value g) {
  const Shape& in = c.inputs[0].shape();
  auto axes = NormalizeAxes(c.attrs().GetInts("axes"), in.rank());
  const Shape kept = KeptShape(in, *axes, /*keepdims=*/true);
  return BroadcastTo(Reshape(g, std::vector<int64_t>(kept.dims().begin(), kept.dims().end())), in);
}

int64_t ReducedCount(const GradContext& c) {
  const Shape& in = c.inputs[0].shape();
  auto axes = NormalizeAxes(c.attrs().GetInts("axes"), in.rank());
  int64_t n = 1;
  for (int a : *axes) n *= in[a];
  return n;
}

std::vector<Value> SumGrad(const GradContext& c) { return {Unreduce(c, c.grad)}; }
std::vector<Value> MeanGrad(const GradContext& c) {
  const int64_t n = ReducedCount(c);
  return {Unreduce(c, Scale(c.grad, n ? 1.0 / n : 0.0))};
}
std::vector<Value> MaxGrad(const GradContext& c) {
  const Value x = c.inputs[0];
  Value hit = Cast(Equal(x, Unreduce(c, c.output)), x.dtype());
  std::vector<int64_t> axes = c.attrs().GetInts("axes");
  Value ties = Unreduce(c, Sum(hit, axes, c.attrs().GetBool("keepdims")));
  return {Div(Mul(Unreduce(c, c.grad), hit), ties)};
}

const OpDef kSum = {.name = "sum", .dot_label = "Sum", .infer = InferReduce,
                    .cpu = ReduceKernel<Reduction::kSum>, .grad = SumGrad};
const OpDef kMean = {.name = "mean", .dot_label = "Mean", .infer = InferMean,
                     .cpu = ReduceKernel<Reduction::kMean>, .grad = MeanGrad};
const OpDef kMax = {.name = "max", .dot_label = "Max", .infer = InferReduce,
                    .cpu = ReduceKernel<Reduction::kMax>, .grad = MaxGrad};

Value Reduce(const OpDef& op, Value x, std::vector<int64_t> axes, bool keepdims) {
  return BuildOp(op, {x}, Attrs().Ints("axes", std::move(axes)).Bool("keepdims", keepdims));
}

}  // namespace

Value Sum(Value x, std::vector<int64_t> axes, bool keepdims) {
  return Reduce(kSum, x, std::move(axes), keepdims);
}
Value Mean(Value x, std::vector<int64_t> axes, bool keepdims) {
  return Reduce(kMean, x, std::move(axes), keepdims);
}
Value Max(Value x, std::vector<int64_t> axes, bool keepdims) {
  return Reduce(kMax, x, std::move(axes), keepdims);
}

Value SumTo(Value x, const Shape& shape) {
  if (!x.ok() || x.shape() == shape) return x;
  if (!IsBroadcastableTo(shape, x.shape())) {
    return x.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "SumTo: ", shape.ToString(), " does not broadcast to ", x.shape().ToString())));
  }
  std::vector<int64_t> axes;
  const int lead = x.rank() - shape.rank();
  for (int i = 0; i < x.rank(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && x.dim(i) != 1)) axes.push_back(i);
  }
  Value s = axes.empty() ? x : Sum(x, axes);
  return Reshape(s, std::vector<int64_t>(shape.dims().begin(), shape.dims().end()));
}

std::vector<const OpDef*> ReduceOps() { return {&kSum, &kMean, &kMax}; }

}  // namespace dagrad
