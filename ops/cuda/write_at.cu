// The CUDA kernel of write_at (ops/write_at.cc): the slice copied in place,
// at the start the kernel reads from device memory (fed, so a recorded run
// replays with each run's position). The executor's check has refused a
// fed start outside the target; a computed one out of range writes nothing.

#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/write_at.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

// Words of type W: inner words per row, n rows of the value per outer
// index, P rows of the target.
template <typename W>
__global__ void WriteAtImpl(W* dst, const W* src, const int64_t* start_in, int64_t outer,
                            int64_t P, int64_t n, int64_t inner) {
  const int64_t start = *start_in;
  if (start < 0 || start > P - n) return;
  DAGRAD_CUDA_LOOP(i, outer * n * inner) {
    const int64_t o = i / (n * inner), rest = i % (n * inner);
    dst[(o * P + start) * inner + rest] = src[i];
  }
}

template <typename W>
absl::Status Launch(const KernelContext& ctx, const WriteAtRows& w) {
  const int64_t inner = w.inner_bytes / static_cast<int64_t>(sizeof(W));
  const int64_t total = w.outer * w.written * inner;
  if (total == 0) return absl::OkStatus();
  WriteAtImpl<W><<<GridFor(total), kThreads, 0, CudaContextOf(ctx).stream()>>>(
      ctx.in(0).as<W>(), ctx.in(1).as<W>(), ctx.in(2).as<int64_t>(), w.outer, w.rows, w.written,
      inner);
  return CheckLaunch("WriteAtImpl");
}

absl::Status WriteAtKernel(const KernelContext& ctx) {
  const WriteAtRows w = WriteAtLayout(*ctx.in(0).shape, *ctx.in(1).shape, ctx.in(0).dtype,
                                      ctx.attrs().GetInt("axis"));
  if (w.inner_bytes % 4 == 0) return Launch<uint32_t>(ctx, w);
  if (w.inner_bytes % 2 == 0) return Launch<uint16_t>(ctx, w);
  return Launch<uint8_t>(ctx, w);
}

}  // namespace

DAGRAD_CUDA_KERNEL(write_at, WriteAtKernel);

}  // namespace dagrad
