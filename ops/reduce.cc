// Reductions: sum, mean, max over any set of axes. One kernel and shape
// function serve all three; each op's gradient rule, OpDef and builder follow.
//
// Kernels see the input as (outer, reduced, inner) when the reduced axes are
// contiguous — the common cases (last axis, leading batch axes) — and fall
// back to an odometer over the reduced axes otherwise.

#include <algorithm>
#include <limits>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/math/int_math.h"
#include "ops/math/minmax.h"
#include "ops/op_util.h"
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

// Sums accumulate in Acc<T>: double for floats, so that every path (row,
// column, odometer) agrees with float64 to the output's rounding; int64 for
// integers, which wrap (ops/math/int_math.h) to the same bits on every path.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Finish turns a sum of `count` elements into the output: the sum itself,
// or the mean (NaN for count == 0, as torch.mean over no elements).
template <typename T>
T Finish(Reduction r, Acc<T> sum, int64_t count) {
  if constexpr (std::is_floating_point_v<T>) {
    if (r == Reduction::kMean) {
      return static_cast<T>(count ? sum / static_cast<double>(count)
                                  : std::numeric_limits<double>::quiet_NaN());
    }
  }
  return static_cast<T>(sum);
}

// ReduceRow reduces `mid` contiguous elements (the last-axis case).
template <typename T>
T ReduceRow(Reduction r, const T* row, int64_t mid) {
  if (r == Reduction::kMax) return RowMax(row, mid);
  Acc<T> s = 0;
  if constexpr (std::is_floating_point_v<T>) {
    s = SumLanes(mid, [&](int64_t i) { return static_cast<double>(row[i]); });
  } else {
    for (int64_t i = 0; i < mid; ++i) s = WrapAdd<Acc<T>>(s, row[i]);
  }
  return Finish<T>(r, s, mid);
}

// ReduceColumns reduces `mid` rows of `inner` elements, `len` columns of
// them from `in`, into `out`: one accumulator per column (Acc<T> for sums,
// T for max) in a tile on the stack, so the inner loop is a vectorised
// convert-and-add (or compare-and-blend) over contiguous memory. Four rows
// are combined per pass over the tile, so the tile is loaded and stored a
// quarter as often (two floats add exactly in double, so the sum is as
// accurate as a row-by-row one).
constexpr int64_t kReduceTile = 512;

template <typename T, typename A, typename Combine>
void ReduceColumnsInto(A* acc, const T* in, int64_t mid, int64_t inner, int64_t len,
                       Combine combine) {
  int64_t m = 0;
  for (; m + 4 <= mid; m += 4) {
    const T *s0 = in + m * inner, *s1 = s0 + inner, *s2 = s1 + inner, *s3 = s2 + inner;
    for (int64_t j = 0; j < len; ++j) {
      acc[j] = combine(acc[j], combine(combine(A(s0[j]), A(s1[j])),
                                       combine(A(s2[j]), A(s3[j]))));
    }
  }
  for (; m < mid; ++m) {
    const T* src = in + m * inner;
    for (int64_t j = 0; j < len; ++j) acc[j] = combine(acc[j], A(src[j]));
  }
}

template <typename T>
void ReduceColumns(const CpuKernels& kernels, Reduction r, const T* in, T* out, int64_t mid,
                   int64_t inner, int64_t len) {
  if (r == Reduction::kMax) {
    T acc[kReduceTile];
    std::fill(acc, acc + len, MaxIdentity<T>());
    ReduceColumnsInto(acc, in, mid, inner, len, [](T a, T b) { return PropagatingMax(a, b); });
    std::copy(acc, acc + len, out);
    return;
  }
  Acc<T> acc[kReduceTile] = {};
  if constexpr (std::is_same_v<T, float>) {
    kernels.sum_columns_f32(in, mid, inner, len, acc);  // the same sums, vectorised per level
  } else {
    ReduceColumnsInto(acc, in, mid, inner, len,
                      [](Acc<T> a, Acc<T> b) { return WrapAdd<Acc<T>>(a, b); });
  }
  for (int64_t j = 0; j < len; ++j) out[j] = Finish<T>(r, acc[j], mid);
}

// ReduceContiguous reduces x, seen as (outer, mid, inner), over mid. Threads
// split the outputs, each chunk about RowGrain's count of input elements.
template <typename T>
void ReduceContiguous(const CpuKernels& kernels, Reduction r, const T* x, T* y, int64_t outer,
                      int64_t mid, int64_t inner) {
  const int64_t grain = RowGrain(mid);
  if (inner == 1) {
    ParallelFor(outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) y[o] = ReduceRow(r, x + o * mid, mid);
    });
    return;
  }
  ParallelFor(outer * inner, grain, [&](int64_t b, int64_t e) {
    // Outputs [b, e) of the flat (outer, inner) output, in tiles that stay
    // within one output row.
    for (int64_t t = b; t < e;) {
      const int64_t o = t / inner, j = t % inner;
      const int64_t len = std::min({kReduceTile, inner - j, e - t});
      ReduceColumns(kernels, r, x + o * mid * inner + j, y + t, mid, inner, len);
      t += len;
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
  ParallelFor(outputs, RowGrain(count),
              [&](int64_t b, int64_t e) {
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
          m = PropagatingMax(m, x[off]);
        } else {
          s = WrapAdd<Acc<T>>(s, x[off]);
        }
        for (int a = static_cast<int>(axes.size()) - 1; a >= 0; --a) {
          if (++idx[a] < in[axes[a]]) break;
          idx[a] = 0;
        }
      }
      y[o] = r == Reduction::kMax ? m : Finish<T>(r, s, count);
    }
  });
}

template <Reduction R>
absl::Status ReduceKernel(const KernelContext& ctx) {
  const Shape& in = *ctx.in(0).shape;
  auto axes = NormalizeAxes(ctx.attrs().GetInts("axes"), in.rank());
  if (!axes.ok()) return axes.status();
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  return DispatchNumeric(ctx.output.dtype, "reduce of bool", [&](auto tag) {
    using T = decltype(tag);
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
      ReduceContiguous<T>(*kernels, R, x, y, outer, mid, inner);
    } else {
      ReduceGeneral<T>(R, x, y, in, *axes);
    }
    return absl::OkStatus();
  });
}

// The gradient of a reduction broadcasts g back over the reduced axes.
Value Unreduce(const GradContext& c, Value g) {
  const Shape& in = c.inputs[0].shape();
  auto axes = NormalizeAxes(c.attrs().GetInts("axes"), in.rank());
  if (!axes.ok()) return c.inputs[0].graph()->Error(axes.status());
  const Shape kept = KeptShape(in, *axes, /*keepdims=*/true);
  return BroadcastTo(Reshape(g, std::vector<int64_t>(kept.dims().begin(), kept.dims().end())), in);
}

// ReducedCount is how many elements each output element reduces: the
// input's count over the output's (inference checked the axes).
int64_t ReducedCount(const GradContext& c) {
  const int64_t out = c.output.shape().num_elements();
  return out > 0 ? c.inputs[0].shape().num_elements() / out : 0;
}

Value Reduce(const OpDef& op, Value x, std::vector<int64_t> axes, bool keepdims) {
  return BuildOp(op, {x}, Attrs().Ints("axes", std::move(axes)).Bool("keepdims", keepdims));
}

}  // namespace

// ---------------------------------------------------------------------------
// sum: the gradient broadcasts g back over the reduced axes.

namespace {
std::vector<Value> SumBackward(const GradContext& c) { return {Unreduce(c, c.grad)}; }
const OpDef kSum = {.name = "sum", .dot_label = "Sum", .infer = InferReduce,
                    .cpu = ReduceKernel<Reduction::kSum>, .grad = SumBackward,
                    .onnx = kOnnxExporter};
}  // namespace

DAGRAD_REGISTER_OP(kSum, sum);

Value Sum(Value x, std::vector<int64_t> axes, bool keepdims) {
  return Reduce(kSum, x, std::move(axes), keepdims);
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

// ---------------------------------------------------------------------------
// mean = sum / n over the n reduced elements.

namespace {

// Mean is defined for floats only, as torch.mean.
absl::StatusOr<TensorType> InferMean(const InferContext& ctx) {
  if (!IsFloating(ctx.in(0).dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mean needs a float input, got ", DTypeName(ctx.in(0).dtype), "; Cast it first"));
  }
  return InferReduce(ctx);
}

std::vector<Value> MeanBackward(const GradContext& c) {
  const int64_t n = ReducedCount(c);
  return {Unreduce(c, c.grad * (n ? 1.0 / n : 0.0))};
}

const OpDef kMean = {.name = "mean", .dot_label = "Mean", .infer = InferMean,
                     .cpu = ReduceKernel<Reduction::kMean>, .grad = MeanBackward,
                     .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kMean, mean);

Value Mean(Value x, std::vector<int64_t> axes, bool keepdims) {
  return Reduce(kMean, x, std::move(axes), keepdims);
}

// ---------------------------------------------------------------------------
// max: the gradient goes to the maxima, split evenly between ties.

namespace {
std::vector<Value> MaxBackward(const GradContext& c) {
  const Value x = c.inputs[0];
  Value hit = Cast(Equal(x, Unreduce(c, c.output)), x.dtype());
  std::vector<int64_t> axes = c.attrs().GetInts("axes");
  Value ties = Unreduce(c, Sum(hit, axes, c.attrs().GetBool("keepdims")));
  return {Unreduce(c, c.grad) * hit / ties};
}
const OpDef kMax = {.name = "max", .dot_label = "Max", .infer = InferReduce,
                    .cpu = ReduceKernel<Reduction::kMax>, .grad = MaxBackward,
                    .onnx = kOnnxExporter};
}  // namespace

DAGRAD_REGISTER_OP(kMax, max);

Value Max(Value x, std::vector<int64_t> axes, bool keepdims) {
  return Reduce(kMax, x, std::move(axes), keepdims);
}

}  // namespace dagrad
