// CUDA kernels of the collectives (ops/collective.cc). The sum itself is
// the Communicator's: with a communicator that accepts device memory
// (CUDA-aware MPI; the single-process one) it reads and writes the device
// buffer, after the stream has produced it; otherwise the bytes are staged
// through a pinned host buffer per device buffer, kept for the process's
// life so that every step reuses it. A device buffer whose sum was started
// stays staged until its wait copies the sum back. These kernels wait for
// the host, so a plan holding them is not recorded as a CUDA graph.

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "engine/device/communicator.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

struct PinnedBuffer {
  void* host = nullptr;
  size_t bytes = 0;
};

// Pinned returns the pinned host buffer staging `device`'s `bytes`. Any
// thread may call it (executors of several threads, each its own buffers).
absl::StatusOr<void*> Pinned(const void* device, size_t bytes) {
  static auto* buffers = new std::unordered_map<const void*, PinnedBuffer>();
  static auto* mu = new std::mutex;
  std::lock_guard<std::mutex> hold(*mu);
  PinnedBuffer& b = (*buffers)[device];
  if (b.bytes < bytes) {
    if (b.host != nullptr) DAGRAD_CUDA_RETURN_IF_ERROR(cudaFreeHost(b.host));
    b = {};
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMallocHost(&b.host, bytes));
    b.bytes = bytes;
  }
  return b.host;
}

// Staged is where the communicator reads the buffer: the device buffer
// itself once the stream is idle, or its pinned host copy.
absl::StatusOr<ReduceBuffer> Staged(const KernelContext& ctx, const TensorRef& t) {
  cudaStream_t stream = CudaContextOf(ctx).stream();
  ReduceBuffer b{.data = t.data, .count = t.num_elements(), .dtype = t.dtype, .stream = stream};
  if (!ctx.run.communicator->accepts_device_memory()) {
    DAGRAD_ASSIGN_OR_RETURN(b.data, Pinned(t.data, t.nbytes()));
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(b.data, t.data, t.nbytes(), cudaMemcpyDeviceToHost, stream));
  }
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return b;
}

// Unstage copies a staged sum back into the device buffer.
absl::Status Unstage(const KernelContext& ctx, const TensorRef& t, const ReduceBuffer& b) {
  if (b.data == t.data) return absl::OkStatus();
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(t.data, b.data, t.nbytes(), cudaMemcpyHostToDevice,
                                              CudaContextOf(ctx).stream()));
  return absl::OkStatus();
}

absl::Status CopyOnDevice(const KernelContext& ctx, void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return absl::OkStatus();
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                              CudaContextOf(ctx).stream()));
  return absl::OkStatus();
}

absl::Status AllReduceKernel(const KernelContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(CopyOnDevice(ctx, ctx.output.data, ctx.in(0).data, ctx.output.nbytes()));
  DAGRAD_ASSIGN_OR_RETURN(ReduceBuffer b, Staged(ctx, ctx.output));
  DAGRAD_RETURN_IF_ERROR(ctx.run.communicator->AllReduceSum(b));
  return Unstage(ctx, ctx.output, b);
}

// The pieces as the CPU kernel packs them (ops/collective.cc: the first
// input from "first_begin", the last up to "last_end").
absl::Status StartKernel(const KernelContext& ctx) {
  char* out = static_cast<char*>(ctx.output.data);
  const size_t size = SizeOf(ctx.output.dtype), count = ctx.inputs.size();
  for (size_t i = 0; i < count; ++i) {
    const int64_t begin = i == 0 ? ctx.attrs().GetInt("first_begin") : 0;
    const int64_t end = i + 1 == count ? ctx.attrs().GetInt("last_end")
                                       : ctx.inputs[i].num_elements();
    const size_t bytes = (end - begin) * size;
    DAGRAD_RETURN_IF_ERROR(CopyOnDevice(
        ctx, out, static_cast<const char*>(ctx.inputs[i].data) + begin * size, bytes));
    out += bytes;
  }
  DAGRAD_ASSIGN_OR_RETURN(ReduceBuffer b, Staged(ctx, ctx.output));
  return ctx.run.communicator->StartAllReduceSum(b);
}

absl::Status WaitKernel(const KernelContext& ctx) {
  const TensorRef& started = ctx.in(0);
  ReduceBuffer b{.data = started.data, .count = started.num_elements(), .dtype = started.dtype};
  if (!ctx.run.communicator->accepts_device_memory()) {
    DAGRAD_ASSIGN_OR_RETURN(b.data, Pinned(started.data, started.nbytes()));
  }
  DAGRAD_RETURN_IF_ERROR(ctx.run.communicator->WaitAllReduce(b.data));
  DAGRAD_RETURN_IF_ERROR(Unstage(ctx, started, b));
  return CopyOnDevice(ctx, ctx.output.data, started.data, ctx.output.nbytes());
}

}  // namespace

DAGRAD_CUDA_KERNEL(all_reduce, AllReduceKernel);
DAGRAD_CUDA_KERNEL(all_reduce_start, StartKernel);
DAGRAD_CUDA_KERNEL(all_reduce_wait, WaitKernel);

}  // namespace dagrad
