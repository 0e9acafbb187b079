#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/device/aligned_buffer.h"
#include "engine/device/device.h"

namespace dagrad {
namespace {

class HostDevice final : public Device {
 public:
  std::string name() const override { return "cpu"; }
  bool is_host() const override { return true; }
  absl::StatusOr<std::shared_ptr<void>> Allocate(size_t bytes) override {
    std::shared_ptr<void> p = AllocateAligned(bytes);
    if (p == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of host memory allocating ", bytes, " bytes"));
    }
    return p;
  }
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status Fill(void* dst, unsigned char byte, size_t bytes) override {
    if (bytes) std::memset(dst, byte, bytes);
    return absl::OkStatus();
  }
  Kernel KernelFor(const OpDef& op) const override { return op.cpu; }
};

}  // namespace

std::unique_ptr<Device> CpuDevice() { return std::make_unique<HostDevice>(); }

}  // namespace dagrad
