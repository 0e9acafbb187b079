// cumsum: the running sum along an axis, read top to bottom: shape
// inference, CPU kernel, gradient rule, OpDef, builder.

#include "ops/cumsum.h"

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/cpu/parallel.h"
#include "ops/math/cumsum_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferCumSum(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (x.dtype == DType::kBool) return absl::InvalidArgumentError("x must be numeric, not bool");
  DAGRAD_RETURN_IF_ERROR(NormalizeAxis(ctx.attrs.GetInt("axis"), x.shape.rank()).status());
  return x;
}

absl::Status CumSumKernel(const KernelContext& ctx) {
  if (ctx.output.num_elements() == 0) return absl::OkStatus();  // rows of nothing: no loop
  const Shape& shape = *ctx.in(0).shape;
  DAGRAD_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.attrs().GetInt("axis"), shape.rank()));
  const CumSumLines l = CumSumLayout(shape, axis);
  const bool exclusive = ctx.attrs().GetBool("exclusive"), reverse = ctx.attrs().GetBool("reverse");
  return DispatchNumeric(ctx.in(0).dtype, "cumsum of bool", [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    T* y = ctx.output.as<T>();
    ParallelFor(l.outer * l.inner, RowGrain(l.n), [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t start = CumSumLineStart(line, l.n, l.inner);
        CumSumLine(x + start, y + start, l.n, l.inner, exclusive, reverse);
      }
    });
    return absl::OkStatus();
  });
}

std::vector<Value> CumSumGrad(const GradContext& c) {
  return {CumSum(c.grad, c.attrs().GetInt("axis"),
                 {.exclusive = c.attrs().GetBool("exclusive"),
                  .reverse = !c.attrs().GetBool("reverse")})};
}

const OpDef kCumSum = {.name = "cumsum", .dot_label = "CumSum", .infer = InferCumSum,
                       .cpu = CumSumKernel, .grad = CumSumGrad, .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kCumSum, cumsum);

CumSumLines CumSumLayout(const Shape& shape, int axis) {
  CumSumLines l{.n = shape[axis]};
  for (int d = 0; d < axis; ++d) l.outer *= shape[d];
  for (int d = axis + 1; d < shape.rank(); ++d) l.inner *= shape[d];
  return l;
}

Value CumSum(Value x, int64_t axis, const CumSumOptions& options) {
  return BuildOp(kCumSum, {x}, Attrs()
                                   .Int("axis", axis)
                                   .Bool("exclusive", options.exclusive)
                                   .Bool("reverse", options.reverse));
}

}  // namespace dagrad
