// CUDA kernel of cast (ops/cast.cc): every dtype to every other, the
// 16-bit floats included, each element converted by engine/bfloat16.h's
// ConvertElement as on the CPU, so both backends give the same bits.

#include <limits>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/bfloat16.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

// The CPU kernel's test: trunc(x) in [lowest, -lowest), in double; used
// where kConversionCanFail (an integer Out).
template <typename In, typename Out>
struct CastOutOfRange {
  __device__ bool operator()(In x) const {
    const double v = trunc(ConvertElement<double>(x));
    return !(v >= lowest && v < -lowest);
  }
  static constexpr double Lowest() {
    if constexpr (std::is_integral_v<Out>) {
      return static_cast<double>(std::numeric_limits<Out>::lowest());
    } else {
      return 0;
    }
  }
  double lowest = Lowest();
};

template <typename In, typename Out>
__global__ void CastImpl(const In* x, Out* y, int64_t n, CastOutOfRange<In, Out> bad) {
  DAGRAD_CUDA_LOOP(i, n) {
    if constexpr (kConversionCanFail<In, Out>) {
      // Out-of-range elements fail the run (reported by the check); write
      // 0 rather than convert them, which C++ leaves undefined.
      y[i] = bad(x[i]) ? Out(0) : ConvertElement<Out>(x[i]);
    } else {
      y[i] = ConvertElement<Out>(x[i]);
    }
  }
}

template <typename In, typename Out>
absl::Status LaunchCast(const KernelContext& ctx) {
  const int64_t n = ctx.output.num_elements();
  if (n == 0) return absl::OkStatus();
  const In* x = ctx.in(0).as<In>();
  if constexpr (kConversionCanFail<In, Out>) {
    const std::string target(DTypeName(DTypeOf<Out>::value));
    DAGRAD_RETURN_IF_ERROR(cuda::CheckElements(
        ctx, x, n, CastOutOfRange<In, Out>(), [target](const DeviceErrorDetail& d) {
          return absl::StrCat("cannot cast ", d.float_value, " (element ", d.position, ") to ",
                              target);
        }));
  }
  CastImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
      x, ctx.output.as<Out>(), n, CastOutOfRange<In, Out>());
  return CheckLaunch("CastImpl");
}

absl::Status CastKernel(const KernelContext& ctx) {
  return DispatchAll(ctx.in(0).dtype, [&](auto in_tag) {
    return DispatchAll(ctx.output.dtype, [&](auto out_tag) {
      return LaunchCast<decltype(in_tag), decltype(out_tag)>(ctx);
    });
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(cast, CastKernel);

}  // namespace dagrad
