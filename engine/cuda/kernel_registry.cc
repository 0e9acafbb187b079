#include "engine/cuda/kernel_registry.h"

#include <mutex>

#include "absl/container/flat_hash_map.h"

namespace dagrad {
namespace {

struct Table {
  std::mutex mu;
  absl::flat_hash_map<const OpDef*, Kernel> kernels;
};

// Built on first use, so that registrations from static initialisers in
// any order find it.
Table& TheTable() {
  static Table* const table = new Table();
  return *table;
}

}  // namespace

void RegisterCudaKernel(const OpDef& op, Kernel kernel) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  t.kernels.emplace(&op, kernel);
}

Kernel CudaKernelFor(const OpDef& op) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.kernels.find(&op);
  return it == t.kernels.end() ? nullptr : it->second;
}

int CudaKernelCount() {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<int>(t.kernels.size());
}

}  // namespace dagrad
