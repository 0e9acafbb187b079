#include "ops/cuda/registry.h"

#include <string>

#include "absl/container/flat_hash_map.h"

namespace dagrad {
namespace {

const absl::flat_hash_map<std::string, Kernel>& Table() {
  static const auto* const table = [] {
    auto* t = new absl::flat_hash_map<std::string, Kernel>();
    for (auto family : {
             CudaUnaryKernels,
             CudaBinaryKernels,
             CudaReduceKernels,
             CudaShapeKernels,
             CudaMatMulKernels,
             CudaOptimKernels,
             CudaLayerNormKernels,
             CudaGatherKernels,
             CudaSelectKernels,
             CudaFillKernels,
             CudaSoftmaxKernels,
             CudaDropoutKernels,
             CudaLossKernels,
         }) {
      for (const CudaKernelEntry& e : family()) t->emplace(std::string(e.op), e.kernel);
    }
    return t;
  }();
  return *table;
}

}  // namespace

Kernel CudaKernelFor(absl::string_view op_name) {
  auto it = Table().find(op_name);
  return it == Table().end() ? nullptr : it->second;
}

int CudaKernelCount() { return static_cast<int>(Table().size()); }

}  // namespace dagrad
