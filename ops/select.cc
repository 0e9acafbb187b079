// where(cond, a, b), read top to bottom: shape inference, CPU kernel,
// gradient rule, OpDef, builder.

#include "ops/select.h"

#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferWhere(const InferContext& ctx) {
  if (ctx.in(0).dtype != DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("cond must be bool, got ", DTypeName(ctx.in(0).dtype)));
  }
  if (absl::Status st = RequireSameDType(ctx, 1, 2); !st.ok()) return st;
  auto shape = BroadcastShapes(ctx.in(0).shape, ctx.in(1).shape);
  if (shape.ok()) shape = BroadcastShapes(*shape, ctx.in(2).shape);
  if (!shape.ok()) return shape.status();
  return TensorType{ctx.in(1).dtype, *std::move(shape)};
}

absl::Status WhereKernel(const KernelContext& ctx) {
  return DispatchAny(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const bool* cond = ctx.in(0).as<bool>();
    const T* a = ctx.in(1).as<T>();
    const T* b = ctx.in(2).as<T>();
    T* y = ctx.output.as<T>();
    const Shape& out = *ctx.output.shape;
    if (*ctx.in(0).shape == out && *ctx.in(1).shape == out && *ctx.in(2).shape == out) {
      ParallelFor(out.num_elements(), kElementGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) y[i] = cond[i] ? a[i] : b[i];
      });
      return absl::OkStatus();
    }
    const StridedLoop<3> loop =
        BroadcastLoop<3>(out, {ctx.in(0).shape, ctx.in(1).shape, ctx.in(2).shape});
    loop.Run([&](int64_t o, const int64_t* in, const int64_t* step, int64_t n) {
      const bool* pc = cond + in[0];
      const T* pa = a + in[1];
      const T* pb = b + in[2];
      for (int64_t i = 0; i < n; ++i) {
        y[o + i] = pc[i * step[0]] ? pa[i * step[1]] : pb[i * step[2]];
      }
    });
    return absl::OkStatus();
  });
}

// g has the output's (broadcast) shape; autodiff sums each gradient back to
// its input's shape.
std::vector<Value> WhereBackward(const GradContext& c) {
  const Value cond = c.inputs[0], g = c.grad;
  const Value zero = ScalarLike(g, 0.0);
  return {Value(), c.needs[1] ? Where(cond, g, zero) : Value(),
          c.needs[2] ? Where(cond, zero, g) : Value()};
}

const OpDef kWhere = {.name = "where",
                      .dot_label = "Where",
                      .infer = InferWhere,
                      .cpu = WhereKernel,
                      .grad = WhereBackward,
                      .nondiff_inputs = 0b001,
                      .onnx = OnnxTwin("Where")};

}  // namespace

DAGRAD_REGISTER_OP(kWhere, where);

Value Where(Value cond, Value a, Value b) { return BuildOp(kWhere, {cond, a, b}); }

}  // namespace dagrad
