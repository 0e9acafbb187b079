// The CUDA kernel of write_at (ops/write_at.cc): the slice copied in place,
// at the start the kernel reads from device memory (fed, so a recorded run
// replays with each run's position). The executor's check has refused a
// start fed from the host outside the target; one computed on the device,
// or fed there, is checked by the kernel, which then writes nothing and
// fails the run with the CPU's message. A value that overlaps the target
// (a view of it: a cache shifted by one) is copied aside first, as the
// CPU's kernel does (it copies aside over several blocks, and one block's
// memmove reads it whole before writing); the threads of one copy would
// race, reading words others had written.

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
                            int64_t P, int64_t n, int64_t inner, DeviceErrorRecord* record,
                            int site) {
  const int64_t start = *start_in;
  if (start < 0 || start > P - n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) cuda::ReportBadElement(record, site, 0);
    return;
  }
  DAGRAD_CUDA_LOOP(i, outer * n * inner) {
    const int64_t o = i / (n * inner), rest = i % (n * inner);
    dst[(o * P + start) * inner + rest] = src[i];
  }
}

template <typename W>
absl::Status Launch(const KernelContext& ctx, const void* value, const WriteAtRows& w, int site) {
  const int64_t inner = w.inner_bytes / static_cast<int64_t>(sizeof(W));
  CudaContext& cuda = CudaContextOf(ctx);
  // Launched for an empty write too: the start is checked all the same.
  WriteAtImpl<W><<<GridFor(w.outer * w.written * inner), kThreads, 0, cuda.stream()>>>(
      ctx.in(0).as<W>(), static_cast<const W*>(value), ctx.in(2).as<int64_t>(), w.outer, w.rows,
      w.written, inner, cuda.error_record(), site);
  return CheckLaunch("WriteAtImpl");
}

// Overlaps: the value's bytes and the target's share an address.
bool Overlaps(const KernelContext& ctx, const WriteAtRows& w) {
  const char* target = static_cast<const char*>(ctx.in(0).data);
  const char* value = static_cast<const char*>(ctx.in(1).data);
  const int64_t value_bytes = w.outer * w.written * w.inner_bytes;
  const int64_t target_bytes = w.outer * w.rows * w.inner_bytes;
  return value_bytes > 0 && value < target + target_bytes && target < value + value_bytes;
}

absl::Status WriteAtKernel(const KernelContext& ctx) {
  const int64_t axis = ctx.attrs().GetInt("axis");
  const Shape target = *ctx.in(0).shape, value = *ctx.in(1).shape;
  const WriteAtRows w = WriteAtLayout(target, value, ctx.in(0).dtype, axis);
  CudaContext& cuda = CudaContextOf(ctx);
  const int site = cuda.AddErrorSite(ctx.node, [=](const DeviceErrorDetail& d) {
    return WriteAtStartMessage(d.int_value, target, value, axis);
  });
  const void* source = ctx.in(1).data;
  CudaBuffer aside;  // freed in stream order, after the kernel has read it
  if (Overlaps(ctx, w)) {
    const size_t bytes = w.outer * w.written * w.inner_bytes;
    DAGRAD_ASSIGN_OR_RETURN(aside, cuda.Scratch(bytes));
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(aside.data(), source, bytes, cudaMemcpyDeviceToDevice, cuda.stream()));
    source = aside.data();
  }
  const int word = WriteAtWordBytes(w, ctx.in(0).data, source);
  DAGRAD_RETURN_IF_ERROR(word == 4   ? Launch<uint32_t>(ctx, source, w, site)
                         : word == 2 ? Launch<uint16_t>(ctx, source, w, site)
                                     : Launch<uint8_t>(ctx, source, w, site));
  cuda::CaptureErrorValue<<<1, 1, 0, cuda.stream()>>>(cuda.error_record(), site,
                                                      ctx.in(2).as<int64_t>());
  return CheckLaunch("CaptureErrorValue");
}

}  // namespace

DAGRAD_CUDA_KERNEL(write_at, WriteAtKernel);

}  // namespace dagrad
