// engine/device/device.h
//
// Device: where an executor keeps its arena, variables and constants, and
// whose kernels it runs. The CPU device uses host memory and each op's CPU
// kernel; the CUDA device (engine/cuda/, when built) uses device memory and
// each op's CUDA kernel.
//
// A device may also record the work of one run and replay it as a whole
// (the CUDA device records a CUDA graph): the executor records a plan's
// second run (the first warms up) and replays the recording on later runs,
// which saves launching every kernel again. Kernels being recorded must read everything that
// changes between runs from device memory: feeds are copied into buffers
// that stay put, and per-run values (the dropout step) are written by
// PrepareRun.

#ifndef DAGRAD_ENGINE_DEVICE_DEVICE_H_
#define DAGRAD_ENGINE_DEVICE_DEVICE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/device/aligned_buffer.h"
#include "engine/op.h"

namespace dagrad {

// Recording replays the work a device recorded, with the buffers it was
// recorded with; only the contents of those buffers may have changed.
class Recording {
 public:
  virtual ~Recording() = default;
  // Replay queues the recorded work again.
  virtual absl::Status Replay() = 0;
};

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
  // AllocateStaging returns `bytes` of host memory (non-null even for 0)
  // for CopyToDeviceAsync to copy from: page-locked on a CUDA device, so
  // that the copy runs without the host; plain host memory by default.
  // ResourceExhausted when it cannot.
  virtual absl::StatusOr<std::shared_ptr<void>> AllocateStaging(size_t bytes) {
    std::shared_ptr<void> p = AllocateAligned(bytes);
    if (p == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of host memory allocating ", bytes, " bytes of staging"));
    }
    return p;
  }
  // CopyToDeviceAsync queues a copy from `src`, memory from AllocateStaging,
  // and may return before it is done: `src` must keep its bytes until a
  // Synchronize after it has returned. Work queued after it sees the
  // copied bytes. By default it is CopyToDevice.
  virtual absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes) {
    return CopyToDevice(dst, src, bytes);
  }
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

  // PrepareRun is called before a run's kernels are queued or replayed; a
  // device whose kernels read per-run values from device memory (the CUDA
  // device keeps the dropout step there) writes them here.
  virtual absl::Status PrepareRun(const RunContext& /*run*/) { return absl::OkStatus(); }
  // Record queues the work that `enqueue` queues and returns a Recording
  // of it, or null when this device does not record (the default) or could
  // not record this work: then the work was queued without being recorded,
  // and `*why_not`, when set, says why. An error of `enqueue` is returned
  // as it is, with nothing recorded.
  virtual absl::StatusOr<std::unique_ptr<Recording>> Record(
      const std::function<absl::Status()>& enqueue, absl::Status* /*why_not*/) {
    if (absl::Status queued = enqueue(); !queued.ok()) return queued;
    return nullptr;
  }
};

// CpuDevice returns the host device.
std::unique_ptr<Device> CpuDevice();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DEVICE_DEVICE_H_
