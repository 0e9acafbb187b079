// What crosses between the host and a device that is not the host
// (engine/executor.h): reading many variables is one copy to the host (a
// checkpoint, byte for byte the file of one copy per variable). Run on a
// device whose memory is host memory (tests/support/host_memory_device.h)
// that counts what the executor asks of it, so that it needs no GPU.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/file_io.h"
#include "models/toy_trainer.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/host_memory_device.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// CountingDevice counts the copies to the host.
class CountingDevice final : public HostMemoryDevice {
 public:
  std::string name() const override { return "counting"; }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    ++copies_to_host;
    return HostMemoryDevice::CopyToHost(dst, src, bytes);
  }

  int copies_to_host = 0;
};

TEST(ReadAll, IsOneCopyToTheHostOfEveryValueInOrder) {
  Graph g;
  Value a = g.Parameter("a", {2, 3}, Initializer::Normal(0, 1));
  Value b = g.Variable("b", {4}, Initializer::Ones(), DType::kFloat64);
  Value c = g.Variable("c", {}, Initializer::Constant(7), DType::kInt64);
  Value empty = g.Variable("empty", {0, 2}, Initializer::Zeros());
  auto device = std::make_unique<CountingDevice>();
  CountingDevice& counts = *device;
  Executor exec(g, std::move(device));
  ASSERT_OK(exec.Assign(a, T<float>({2, 3}, {1, -2, 3, -4, 5, -6})));
  counts.copies_to_host = 0;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, exec.ReadAll({c, a, empty, b}));
  EXPECT_EQ(counts.copies_to_host, 1);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(AsDoubles(values[0]), std::vector<double>({7}));
  EXPECT_EQ(AsDoubles(values[1]), std::vector<double>({1, -2, 3, -4, 5, -6}));
  EXPECT_EQ(values[2].shape(), Shape({0, 2}));
  EXPECT_EQ(values[3].dtype(), DType::kFloat64);
  EXPECT_EQ(AsDoubles(values[3]), std::vector<double>({1, 1, 1, 1}));
}

TEST(ReadAll, ABadValueFailsBeforeAnyCopy) {
  Graph g;
  Value a = g.Parameter("a", {2}, Initializer::Ones());
  Value x = g.Input("x", DType::kFloat32, {2});
  auto device = std::make_unique<CountingDevice>();
  CountingDevice& counts = *device;
  Executor exec(g, std::move(device));
  EXPECT_STATUS(exec.ReadAll({a, x}).status(), absl::StatusCode::kInvalidArgument,
                "ReadAll: 'x' is not a variable of this executor's graph");
  EXPECT_EQ(counts.copies_to_host, 0);
}

// Over the memory limit the gather does not fit: a copy per variable.
TEST(ReadAll, WithoutRoomForTheGatherReadsOneByOne) {
  Graph g;
  Value a = g.Parameter("a", {64}, Initializer::Ones());
  Value b = g.Parameter("b", {64}, Initializer::Zeros());
  auto device = std::make_unique<CountingDevice>();
  CountingDevice& counts = *device;
  Executor exec(g, std::move(device), {.memory_limit_bytes = 600});
  ASSERT_OK(exec.InitializeVariables());  // 512 bytes of 600
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, exec.ReadAll({a, b}));
  EXPECT_EQ(counts.copies_to_host, 2);
  EXPECT_EQ(AsDoubles(values[0]), std::vector<double>(64, 1));
  EXPECT_EQ(AsDoubles(values[1]), std::vector<double>(64, 0));
}

models::TrainConfig SmallToy() {
  return {.model = {.vocab = 7, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1, .ffn = 32},
          .min_len = 2, .batch = 4, .steps = 3, .eval_size = 4};
}

// The training checkpoint of a device that is not the host is one copy to
// the host, and its bytes are those of the CPU's, which reads each variable
// with a copy of its own.
TEST(ReadAll, ACheckpointIsOneCopyWithTheCpusBytes) {
  auto device = std::make_unique<CountingDevice>();
  CountingDevice& counts = *device;
  ASSERT_OK_AND_ASSIGN(auto on_device, models::ToyTrainer::Create(SmallToy(), std::move(device)));
  ASSERT_OK_AND_ASSIGN(auto on_cpu, models::ToyTrainer::Create(SmallToy()));
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(on_device->Step().status());
    ASSERT_OK(on_cpu->Step().status());
  }
  const std::string dir = ::testing::TempDir();
  counts.copies_to_host = 0;
  ASSERT_OK(on_device->SaveCheckpoint(dir + "/device_ckpt.safetensors"));
  EXPECT_EQ(counts.copies_to_host, 1);
  ASSERT_OK(on_cpu->SaveCheckpoint(dir + "/cpu_ckpt.safetensors"));
  ASSERT_OK_AND_ASSIGN(std::string device_bytes, ReadFile(dir + "/device_ckpt.safetensors"));
  ASSERT_OK_AND_ASSIGN(std::string cpu_bytes, ReadFile(dir + "/cpu_ckpt.safetensors"));
  EXPECT_GT(device_bytes.size(), 1000u);
  EXPECT_TRUE(device_bytes == cpu_bytes);
}

}  // namespace
}  // namespace dagrad::testing
