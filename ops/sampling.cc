// Sampling ops (ops/sampling.h): argmax, topk_values / topk_indices and
// multinomial: shape inference, CPU kernels (the per-row rules of
// ops/math/sampling_math.h), the OpDefs (not differentiable), then the builders.

#include "ops/sampling.h"

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "engine/status_macros.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/math/sampling_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

// RequireNumeric: a tensor of rank >= 1 and a numeric dtype.
absl::Status RequireNumeric(const InferContext& ctx, const char* what) {
  if (ctx.in(0).dtype == DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be numeric, got bool"));
  }
  if (ctx.in(0).shape.rank() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must have rank >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> InferArgMax(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireNumeric(ctx, "input"));
  const Shape& s = ctx.in(0).shape;
  DAGRAD_ASSIGN_OR_RETURN(const AxisRows r,
                          AxisRowsOf(s, ctx.attrs.GetInt("axis")));
  if (r.n == 0) return absl::InvalidArgumentError("argmax of an empty axis");
  Dims out = s.dims();
  out.erase(out.begin() + r.axis);
  return TensorType{DType::kInt64, Shape(out)};
}

// topk_values and topk_indices: the axis becomes k.
absl::StatusOr<TensorType> InferTopK(const InferContext& ctx, DType dtype) {
  DAGRAD_RETURN_IF_ERROR(RequireNumeric(ctx, "input"));
  const Shape& s = ctx.in(0).shape;
  DAGRAD_ASSIGN_OR_RETURN(const AxisRows r,
                          AxisRowsOf(s, ctx.attrs.GetInt("axis")));
  const int64_t k = ctx.attrs.GetInt("k");
  if (k < 0 || k > r.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("k must be in [0, ", r.n, "] (the axis' size), got ", k));
  }
  Dims out = s.dims();
  out[r.axis] = k;
  return TensorType{dtype, Shape(out)};
}
absl::StatusOr<TensorType> InferTopKValues(const InferContext& ctx) {
  return InferTopK(ctx, ctx.in(0).dtype);
}
absl::StatusOr<TensorType> InferTopKIndices(const InferContext& ctx) {
  return InferTopK(ctx, DType::kInt64);
}

absl::StatusOr<TensorType> InferMultinomial(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "probs"));
  const Shape& s = ctx.in(0).shape;
  if (s.rank() < 1 || s[s.rank() - 1] == 0) {
    return absl::InvalidArgumentError(
        "probs must have rank >= 1 and a non-empty last axis");
  }
  Dims out = s.dims();
  out.back() = 1;
  return TensorType{DType::kInt64, Shape(out)};
}

// FirstLargest is ArgMaxRow(x, n, 1) for floating T, at memory speed: the
// row's maximum (RowMax, vectorised), then the first element equal to it.
// A NaN, which RowMax propagates and SortsBefore puts first, sends the row
// to ArgMaxRow.
template <typename T>
int64_t FirstLargest(const T* x, int64_t n) {
  const T m = RowMax(x, n);
  if (m != m) return ArgMaxRow(x, n, 1);
  return std::find(x, x + n, m) - x;
}

absl::Status ArgMaxKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(
      const AxisRows r,
      AxisRowsOf(*ctx.in(0).shape, ctx.attrs().GetInt("axis")));
  return DispatchNumeric(
      ctx.in(0).dtype, "a sampling op on bool", [&](auto tag) {
        using T = decltype(tag);
        const T* x = ctx.in(0).as<T>();
        int64_t* y = ctx.output.as<int64_t>();
        ParallelFor(r.outer * r.inner, 1024, [&](int64_t b, int64_t e) {
          for (int64_t row = b; row < e; ++row) {
            const int64_t o = row / r.inner, i = row % r.inner;
            const T* first = x + o * r.n * r.inner + i;
            if constexpr (std::is_floating_point_v<T>) {
              if (r.inner == 1) {
                y[row] = FirstLargest(first, r.n);
                continue;
              }
            }
            y[row] = ArgMaxRow(first, r.n, r.inner);
          }
        });
        return absl::OkStatus();
      });
}

// TopKKernel writes the values (`indices` false) or the indices of each
// row's first k elements in SortsBefore's order.
absl::Status TopKKernel(const KernelContext& ctx, bool indices) {
  DAGRAD_ASSIGN_OR_RETURN(
      const AxisRows r,
      AxisRowsOf(*ctx.in(0).shape, ctx.attrs().GetInt("axis")));
  const int64_t k = ctx.attrs().GetInt("k");
  return DispatchNumeric(
      ctx.in(0).dtype, "a sampling op on bool", [&](auto tag) {
        using T = decltype(tag);
        const T* x = ctx.in(0).as<T>();
        ParallelFor(r.outer * r.inner, 64, [&](int64_t b, int64_t e) {
          std::vector<int64_t> order(r.n);
          for (int64_t row = b; row < e; ++row) {
            const int64_t o = row / r.inner, i = row % r.inner;
            const T* in = x + o * r.n * r.inner + i;
            std::iota(order.begin(), order.end(), 0);
            std::partial_sort(order.begin(), order.begin() + k, order.end(),
                              [&](int64_t p, int64_t q) {
                                return SortsBefore(in[p * r.inner], p,
                                                   in[q * r.inner], q);
                              });
            const int64_t base = o * k * r.inner + i;
            for (int64_t j = 0; j < k; ++j) {
              if (indices) {
                ctx.output.as<int64_t>()[base + j * r.inner] = order[j];
              } else {
                ctx.output.as<T>()[base + j * r.inner] = in[order[j] * r.inner];
              }
            }
          }
        });
        return absl::OkStatus();
      });
}
absl::Status TopKValuesKernel(const KernelContext& ctx) {
  return TopKKernel(ctx, false);
}
absl::Status TopKIndicesKernel(const KernelContext& ctx) {
  return TopKKernel(ctx, true);
}

absl::Status MultinomialKernel(const KernelContext& ctx) {
  const Rows r = RowsOf(*ctx.in(0).shape);
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs().GetInt("seed"));
  const uint32_t step = static_cast<uint32_t>(ctx.run.step);
  return DispatchFloat(ctx.in(0).dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* p = ctx.in(0).as<T>();
    int64_t* y = ctx.output.as<int64_t>();
    for (int64_t row = 0; row < r.rows; ++row) {
      const double u = MultinomialU(seed, kMultinomialStream, step, row);
      y[row] = MultinomialRow(p + row * r.d, r.d, u);
      if (y[row] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "row ", row,
            " of probs is no distribution: its values must be finite and >= 0, "
            "with a positive sum"));
      }
    }
    return absl::OkStatus();
  });
}

const OpDef kArgMax = {.name = "argmax",
                       .dot_label = "ArgMax",
                       .infer = InferArgMax,
                       .cpu = ArgMaxKernel,
                       .differentiable = false,
                       .onnx = kOnnxExporter};
const OpDef kTopKValues = {.name = "topk_values",
                           .dot_label = "TopK",
                           .infer = InferTopKValues,
                           .cpu = TopKValuesKernel,
                           .differentiable = false,
                           .onnx = kOnnxExporter};
const OpDef kTopKIndices = {.name = "topk_indices",
                            .dot_label = "TopK indices",
                            .infer = InferTopKIndices,
                            .cpu = TopKIndicesKernel,
                            .differentiable = false,
                            .onnx = kOnnxExporter};
const OpDef kMultinomial = {.name = "multinomial",
                            .dot_label = "Multinomial",
                            .infer = InferMultinomial,
                            .cpu = MultinomialKernel,
                            .differentiable = false,
                            .random = true,
                            .onnx = NoOnnx("ONNX's Multinomial draws from its own generator, "
                                           "not dagrad's Philox stream")};

}  // namespace

DAGRAD_REGISTER_OP(kArgMax, argmax);
DAGRAD_REGISTER_OP(kTopKValues, topk_values);
DAGRAD_REGISTER_OP(kTopKIndices, topk_indices);
DAGRAD_REGISTER_OP(kMultinomial, multinomial);

Value ArgMax(Value x, int64_t axis) {
  return BuildOp(kArgMax, {x}, Attrs().Int("axis", axis));
}

TopKResult TopK(Value x, int64_t k, int64_t axis) {
  const Attrs attrs = Attrs().Int("k", k).Int("axis", axis);
  return {BuildOp(kTopKValues, {x}, attrs), BuildOp(kTopKIndices, {x}, attrs)};
}

Value Multinomial(Value probs, uint64_t seed) {
  return BuildOp(kMultinomial, {probs},
                 Attrs().Int("seed", static_cast<int64_t>(seed)));
}

}  // namespace dagrad
