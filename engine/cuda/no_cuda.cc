// The CUDA device's API in a build without the CUDA backend
// (DAGRAD_CUDA=OFF, or no nvcc found): everything reports that it is
// missing, so callers and tests handle "not built" like "no GPU".

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_device.h"

namespace dagrad {
namespace {

constexpr char kNotBuilt[] =
    "the CUDA backend is not built into this binary (configure with -DDAGRAD_CUDA=ON "
    "and a CUDA toolkit)";

}  // namespace

bool CudaBuiltIn() { return false; }

absl::StatusOr<std::unique_ptr<Device>> CudaDevice(int, const CudaOptions&) {
  return absl::UnavailableError(kNotBuilt);
}

std::vector<std::string> CudaDeviceNames() { return {}; }

std::string DescribeCuda() { return "not built into this binary"; }

absl::StatusOr<std::vector<double>> TimeOnDevice(const Device& device, int,
                                                 const std::function<absl::Status()>&) {
  return absl::FailedPreconditionError(
      absl::StrCat("TimeOnDevice needs a CUDA device, got ", device.name(), "; ", kNotBuilt));
}

}  // namespace dagrad
