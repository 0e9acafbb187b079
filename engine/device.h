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
  // Allocate returns `bytes` of zeroed device memory; ResourceExhausted when
  // it cannot.
  virtual absl::StatusOr<std::shared_ptr<void>> Allocate(size_t bytes) = 0;
  virtual absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  // KernelFor returns the op's kernel on this device, or null.
  virtual Kernel KernelFor(const OpDef& op) const = 0;
  // stream is handed to kernels in RunContext (null on the CPU).
  virtual void* stream() const { return nullptr; }
  // Synchronize waits for queued work and reports its first error.
  virtual absl::Status Synchronize() { return absl::OkStatus(); }
};

// CpuDevice returns the host device.
std::unique_ptr<Device> CpuDevice();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DEVICE_H_
