// engine/device.h
//
// Device: where an executor keeps its arena, variables and constants, and
// whose kernels it runs. The CPU device uses host memory and each op's CPU
// kernel; the CUDA device (engine/cuda/, when built) uses device memory and
// each op's CUDA kernel.

#ifndef DAGRAD_ENGINE_DEVICE_H_
#define DAGRAD_ENGINE_DEVICE_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/op.h"

namespace dagrad {

class Device {
 public:
  virtual ~Device() = default;

  // name is "cpu" or e.g. "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string name() const = 0;
  // is_host is true when device memory is host memory, so feeds can be read
  // where they are.
  virtual bool is_host() const = 0;
  // Allocate returns `bytes` of zeroed device memory (a non-null pointer
  // even for 0 bytes); ResourceExhausted when it cannot.
  virtual absl::StatusOr<std::shared_ptr<void>> Allocate(size_t bytes) = 0;
  // CopyToDevice returns once `src` may be reused; work queued after it
  // sees the copied bytes.
  virtual absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  // CopyToHost returns once `dst` holds the bytes, after all queued work.
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  // CopyOnDevice copies in queue order; dst == src is a no-op.
  virtual absl::Status CopyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  // Fill sets `bytes` bytes at dst to `byte`, in queue order (the executor
  // poisons arenas with it when asked).
  virtual absl::Status Fill(void* dst, unsigned char byte, size_t bytes) = 0;
  // KernelFor returns the op's kernel on this device, or null.
  virtual Kernel KernelFor(const OpDef& op) const = 0;
  // kernel_state is handed to kernels as RunContext::device_state (null on
  // the CPU; engine/cuda's CudaContext on a CUDA device).
  virtual void* kernel_state() const { return nullptr; }
  // Synchronize waits for queued work and reports its first error: an
  // error a kernel detected on the device (an index out of range: the
  // status names the op and node as a CPU kernel's error would), or a
  // failure of the device itself.
  virtual absl::Status Synchronize() { return absl::OkStatus(); }
};

// CpuDevice returns the host device.
std::unique_ptr<Device> CpuDevice();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DEVICE_H_
