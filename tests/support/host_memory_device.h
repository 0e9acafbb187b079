// tests/support/host_memory_device.h
//
// HostMemoryDevice: a device for tests of the executor's protocol with a
// device that is not the host (staged feeds, recordings, errors reported
// late), without a GPU. Its memory is host memory and its kernels are the
// ops' CPU kernels, but it says it is not the host, so the executor treats
// it as it treats a CUDA device. Tests derive from it and override what
// they study (Record, Synchronize).
//
//   class Mine final : public HostMemoryDevice { ... Record(...) override; };
//   Executor exec(g, std::make_unique<Mine>());

#ifndef DAGRAD_TESTS_SUPPORT_HOST_MEMORY_DEVICE_H_
#define DAGRAD_TESTS_SUPPORT_HOST_MEMORY_DEVICE_H_

#include <cstddef>
#include <memory>

#include "engine/device/device.h"

namespace dagrad::testing {

class HostMemoryDevice : public Device {
 public:
  bool is_host() const override { return false; }
  absl::StatusOr<std::shared_ptr<void>> Allocate(size_t bytes) override {
    return host_->Allocate(bytes);
  }
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    return host_->CopyToDevice(dst, src, bytes);
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    return host_->CopyToHost(dst, src, bytes);
  }
  absl::Status CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    return host_->CopyOnDevice(dst, src, bytes);
  }
  absl::Status Fill(void* dst, unsigned char byte, size_t bytes) override {
    return host_->Fill(dst, byte, bytes);
  }
  Kernel KernelFor(const OpDef& op) const override { return op.cpu; }

 private:
  std::unique_ptr<Device> host_ = CpuDevice();
};

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_HOST_MEMORY_DEVICE_H_
