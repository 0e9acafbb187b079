// The CUDA kernel table's coverage: every op of AllOps() has a CUDA kernel,
// but the ops that are always views (kAlwaysView on their op case). Needs
// no GPU; beside the op cases, which it reads (the CUDA backend's other
// tests are tests/models/cuda_test.cc).

#include <set>
#include <string>

#include "ops/registry.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

#ifdef DAGRAD_WITH_CUDA
#include "engine/cuda/kernel_registry.h"
#endif

namespace dagrad::testing {
namespace {

// Ops that are always views (kAlwaysView on their case): the executor
// aliases their input on every device and never runs a kernel for them.
std::set<std::string> AlwaysViews() {
  std::set<std::string> views;
  for (const OpCase& c : AllOpCases()) {
    if (c.flags & kAlwaysView) views.insert(c.op);
  }
  return views;
}

TEST(CudaCoverage, EveryOpHasACudaKernel) {
#ifdef DAGRAD_WITH_CUDA
  const std::set<std::string> views = AlwaysViews();
  for (const OpDef* op : AllOps()) {
    if (views.count(std::string(op->name))) continue;
    EXPECT_NE(CudaKernelFor(*op), nullptr) << "op '" << op->name << "' has no CUDA kernel";
  }
  EXPECT_EQ(CudaKernelCount(), static_cast<int>(AllOps().size() - views.size()))
      << "the CUDA table names an op that AllOps() does not list";
#else
  GTEST_SKIP() << "built without the CUDA backend (DAGRAD_CUDA=OFF or no nvcc)";
#endif
}

}  // namespace
}  // namespace dagrad::testing
