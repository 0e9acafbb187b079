// CUDA kernel of dropout (ops/dropout.cc), following the bit layout
// documented in ops/dropout.h with the same host/device Philox
// (engine/philox.h): one thread per group of four elements, one Philox
// call each. The keep decision and the value are the CPU's own
// (ops/math/dropout_math.h), so masks and values are bit-identical to the CPU's,
// -0.0 and NaN included. The step
// (Philox's counter word) is read from device memory, where the device
// writes each run's step, so that a recorded run replays with a new mask.

#include <algorithm>

#include "engine/philox.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/math/dropout_math.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

// `first` is the global index of element 0 (a data-parallel slice's,
// DropoutFirstElement); a group that is not aligned to Philox's four words
// draws each word on its own.
template <typename T>
__global__ void DropoutImpl(const T* x, T* y, int64_t n, uint64_t first, uint64_t seed,
                            uint32_t stream, const uint64_t* step, uint32_t threshold, T scale) {
  const RandomStream rs{seed, stream, static_cast<uint32_t>(*step)};
  DAGRAD_CUDA_LOOP(group, (n + 3) / 4) {
    const int64_t base = group * 4;
    const uint64_t global = first + static_cast<uint64_t>(base);
    const PhiloxBlock bits = rs.Block(global / 4);
    const int lanes = static_cast<int>(n - base < 4 ? n - base : 4);
    for (int j = 0; j < lanes; ++j) {
      const uint32_t word = global % 4 == 0 ? bits.v[j] : rs.Bits(global + j);
      y[base + j] = DropoutElement(x[base + j], word, threshold, scale);
    }
  }
}

absl::Status DropoutKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    T* y = ctx.output.as<T>();
    const int64_t n = ctx.output.num_elements();
    const double p = ctx.attrs().GetFloat("p");
    const CudaContext& cuda = CudaContextOf(ctx);
    cudaStream_t stream = cuda.stream();
    if (n == 0) return absl::OkStatus();
    if (!ctx.run.training || p == 0.0) {
      if (y != x) {
        DAGRAD_CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(y, x, n * sizeof(T), cudaMemcpyDeviceToDevice, stream));
      }
      return absl::OkStatus();
    }
    const int64_t first = DropoutFirstElement(ctx.run.batch_begin, ctx.run.batch_rows, n);
    if (first < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data-parallel dropout needs an input whose elements split into the batch's ",
          ctx.run.batch_rows, " rows, got ", n, " elements"));
    }
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    DropoutImpl<<<GridFor((n + 3) / 4), kThreads, 0, stream>>>(
        x, y, n, static_cast<uint64_t>(first), ctx.run.seed, ctx.node.RandomStream(), cuda.run_step(), DropoutThreshold(p), scale);
    return CheckLaunch("DropoutImpl");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(dropout, DropoutKernel);

}  // namespace dagrad
