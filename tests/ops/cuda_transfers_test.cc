// On a GPU (each test skips without one, saying why): the transfers that
// tests/models/device_transfers_test.cc checks on host-memory devices, against
// the CPU. ReadAll's gather gives Read's bytes; fed host tensors (through
// page-locked staging, copies that do not wait) and uploaded ones give the
// CPU's results run after run, while the run is replayed from a recording
// with new contents in the staging.

#include <cstring>
#include <memory>
#include <vector>

#include "engine/cuda/cuda_device.h"
#include "engine/executor.h"
#include "ops/elementwise.h"
#include "tests/support/gpu_skip.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(CudaTransfers, ReadAllGivesTheBytesOfRead) {
  SKIP_WITHOUT_GPU();
  Graph g;
  const std::vector<Value> vars = {
      g.Parameter("a", {3, 5}, Initializer::Normal(0, 1)),
      g.Variable("b", {7}, Initializer::Normal(0, 1), DType::kFloat64),
      g.Variable("c", {}, Initializer::Constant(9), DType::kInt64),
      g.Variable("d", {0, 4}, Initializer::Zeros()),
      g.Parameter("e", {1000, 3}, Initializer::XavierUniform())};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Device> gpu, CudaDevice());
  Executor exec(g, std::move(gpu));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> all, exec.ReadAll(vars));
  ASSERT_EQ(all.size(), vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(Tensor one, exec.Read(vars[i]));
    EXPECT_TRUE(SameBytes(all[i], one)) << vars[i].path();
  }
}

// y = x * x + b, bit for bit the CPU's (arithmetic-only elementwise ops),
// over runs with host feeds of x (the first warms up, the second is
// recorded, the others replay it), then uploaded ones.
TEST(CudaTransfers, StagedAndUploadedFeedsGiveTheCpusResults) {
  SKIP_WITHOUT_GPU();
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {64, 33});
  Value b = g.Input("b", DType::kFloat32, {33});
  Value y = x * x + b;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Device> gpu, CudaDevice());
  Executor exec(g, std::move(gpu));
  Executor cpu(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, cpu.Compile({y}));
  for (int run = 0; run < 8; ++run) {
    const Tensor xs = Random(DType::kFloat32, {64, 33}, 100 + run);
    const Feeds bs = {{b, Random(DType::kFloat32, {33}, 200 + run)}};
    Feeds host = bs;
    host.push_back({x, xs});
    ASSERT_OK_AND_ASSIGN(auto want, cpu.Run(*cpu_plan, host));
    absl::StatusOr<std::vector<Tensor>> got;
    if (run < 4) {
      got = exec.Run(*plan, host);
    } else {
      ASSERT_OK_AND_ASSIGN(DeviceTensor uploaded, exec.Upload(xs));
      got = exec.Run(*plan, bs, {{x, uploaded}}, {});
    }
    ASSERT_OK(got.status());
    EXPECT_TRUE(SameBytes((*got)[0], want[0])) << "run " << run;
    if (run == 3) EXPECT_EQ(plan->replays(), 2) << plan->recording_failure();
  }
}

}  // namespace
}  // namespace dagrad::testing
