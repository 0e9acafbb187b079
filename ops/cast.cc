// cast: any dtype to any other, the 16-bit floats included, read top to
// bottom: shape inference, CPU kernel, gradient rule, OpDef, builder. Each
// element converts by engine/bfloat16.h's ConvertElement, which the CUDA
// kernel (ops/cuda/cast.cu) calls too, so both backends give the same bits.

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "engine/bfloat16.h"
#include "engine/status_macros.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferCast(const InferContext& ctx) {
  auto dtype = DTypeFromName(ctx.attrs.GetStr("dtype"));
  if (!dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dtype '", ctx.attrs.GetStr("dtype"), "'"));
  }
  return TensorType{*dtype, ctx.in(0).shape};
}

// CheckCastable returns InvalidArgument for the first element of x that Out
// cannot hold (converting it is undefined behaviour): trunc(x) must lie in
// [lowest, -lowest), in double.
template <typename In, typename Out>
absl::Status CheckCastable(const In* x, int64_t n) {
  if constexpr (kConversionCanFail<In, Out>) {
    const double lowest = static_cast<double>(std::numeric_limits<Out>::lowest());
    for (int64_t i = 0; i < n; ++i) {
      const double v = std::trunc(ConvertElement<double>(x[i]));
      if (!(v >= lowest && v < -lowest)) {
        // The value as its own dtype holds it: 1e+20, not the double of 1e20f.
        std::string text;
        if constexpr (std::is_same_v<In, double>) {
          text = ShortestDecimal(x[i]);
        } else {
          text = ShortestDecimal(ConvertElement<float>(x[i]));
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "cannot cast ", text, " (element ", i, ") to ", DTypeName(DTypeOf<Out>::value)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CastKernel(const KernelContext& ctx) {
  return DispatchAll(ctx.in(0).dtype, [&](auto in_tag) {
    using In = decltype(in_tag);
    return DispatchAll(ctx.output.dtype, [&](auto out_tag) {
      using Out = decltype(out_tag);
      const In* x = ctx.in(0).as<In>();
      Out* y = ctx.output.as<Out>();
      DAGRAD_RETURN_IF_ERROR((CheckCastable<In, Out>(x, ctx.output.num_elements())));
      ParallelFor(ctx.output.num_elements(), kElementGrain, [=](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = ConvertElement<Out>(x[i]);
      });
      return absl::OkStatus();
    });
  });
}

// Between float dtypes the gradient is cast back to the input's gradient
// dtype (GradientDType: a 16-bit float's is float32, so a cast to
// bfloat16 passes its float32 gradient through unrounded); from or to
// integers and bool there is none.
std::vector<Value> CastBackward(const GradContext& c) {
  if (!IsAnyFloat(c.inputs[0].dtype()) || !IsAnyFloat(c.output.dtype())) return {Value()};
  const DType want = GradientDType(c.inputs[0].dtype());
  return {c.grad.dtype() == want ? c.grad : Cast(c.grad, want)};
}

const OpDef kCast = {.name = "cast",
                     .dot_label = "Cast",
                     .infer = InferCast,
                     .cpu = CastKernel,
                     .grad = CastBackward,
                     .reduced_floats = kReducedFloatBits,
                     .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kCast, cast);

Value Cast(Value x, DType dtype) {
  return BuildOp(kCast, {x}, Attrs().Str("dtype", std::string(DTypeName(dtype))));
}

}  // namespace dagrad
