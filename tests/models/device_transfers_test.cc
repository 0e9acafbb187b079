// What crosses between the host and a device that is not the host
// (engine/executor.h): reading many variables is one copy to the host (a
// checkpoint, byte for byte the file of one copy per variable); fed host
// tensors go through staging with copies that do not wait, the staging
// never rewritten before the device has waited for them (a run that fails
// early included); tensors uploaded once are fed with no copy. Run on
// devices whose memory is host memory (tests/support/host_memory_device.h)
// that count what the executor asks of them, one of them completing its
// copies that do not wait only when it must, so that none needs a GPU.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "models/toy/toy_trainer.h"
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

// AsyncDevice completes a CopyToDeviceAsync only at its next call that
// orders work (PrepareRun, Synchronize, another copy), with the bytes its
// source held when it was queued, as a DMA engine could, and counts a
// source written meanwhile. PrepareRun fails, with the copies still
// queued, while fail_prepare is set.
class AsyncDevice final : public HostMemoryDevice {
 public:
  std::string name() const override { return "async"; }
  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes) override {
    ++async_copies;
    const char* from = static_cast<const char*>(src);
    pending_.push_back({dst, src, std::string(from, from + bytes)});
    return absl::OkStatus();
  }
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    Complete();
    ++copies_that_wait;
    return HostMemoryDevice::CopyToDevice(dst, src, bytes);
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    Complete();
    return HostMemoryDevice::CopyToHost(dst, src, bytes);
  }
  absl::Status CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    Complete();
    return HostMemoryDevice::CopyOnDevice(dst, src, bytes);
  }
  absl::Status PrepareRun(const RunContext&) override {
    if (fail_prepare) return absl::UnavailableError("the device went away");
    Complete();
    return absl::OkStatus();
  }
  absl::Status Synchronize() override {
    Complete();
    ++waits;
    return absl::OkStatus();
  }

  int async_copies = 0, copies_that_wait = 0, waits = 0, sources_rewritten = 0;
  bool fail_prepare = false;

 private:
  struct Pending {
    void* dst;
    const void* src;
    std::string bytes;
  };
  void Complete() {
    for (const Pending& p : pending_) {
      if (std::memcmp(p.src, p.bytes.data(), p.bytes.size()) != 0) ++sources_rewritten;
      std::memcpy(p.dst, p.bytes.data(), p.bytes.size());
    }
    pending_.clear();
  }
  std::vector<Pending> pending_;
};

// Fed is y = x * x + b (x (3,) float32, b (3,) float32): two inputs; y
// compiled on an AsyncDevice, `device`.
struct Fed {
  Fed() {
    auto owned = std::make_unique<AsyncDevice>();
    device = owned.get();
    exec = std::make_unique<Executor>(g, std::move(owned));
    absl::StatusOr<std::unique_ptr<Plan>> compiled = exec->Compile({y});
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    if (compiled.ok()) plan = *std::move(compiled);
  }

  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  Value b = g.Input("b", DType::kFloat32, {3});
  Value y = x * x + b;
  AsyncDevice* device = nullptr;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<Plan> plan;
};

TEST(StagedFeeds, AreCopiedWithoutWaitingAndNeverRewrittenEarly) {
  Fed f;
  AsyncDevice& counts = *f.device;
  Executor& exec = *f.exec;
  Plan& plan = *f.plan;
  const int waits_before = counts.waits, copies_before = counts.copies_that_wait;
  for (float v : {1.0f, 2.0f, -3.0f}) {
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(plan, {{f.x, T<float>({3}, {v, 0, 1})},
                                                    {f.b, T<float>({3}, {10, 20, v})}}));
    EXPECT_EQ(AsDoubles(out[0]), std::vector<double>({v * v + 10, 20, 1 + v}));
  }
  EXPECT_EQ(counts.async_copies, 6);                        // two feeds, three runs
  EXPECT_EQ(counts.copies_that_wait - copies_before, 0);    // none per feed
  EXPECT_EQ(counts.waits - waits_before, 3);                // one per run
  EXPECT_EQ(counts.sources_rewritten, 0);
}

// A run that fails after queuing its copies (here at PrepareRun) waits for
// them before it returns, so the next run may write the staging again.
TEST(StagedFeeds, ARunThatFailsEarlyWaitsForItsCopies) {
  Fed f;
  AsyncDevice& counts = *f.device;
  Executor& exec = *f.exec;
  Plan& plan = *f.plan;
  counts.fail_prepare = true;
  EXPECT_STATUS(exec.Run(plan, {{f.x, T<float>({3}, {1, 1, 1})}, {f.b, T<float>({3}, {1, 1, 1})}})
                    .status(),
                absl::StatusCode::kUnavailable, "the device went away");
  counts.fail_prepare = false;
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(plan, {{f.x, T<float>({3}, {2, 2, 2})},
                                                  {f.b, T<float>({3}, {0, 0, 0})}}));
  EXPECT_EQ(AsDoubles(out[0]), std::vector<double>({4, 4, 4}));
  EXPECT_EQ(counts.sources_rewritten, 0);
}

// An uploaded tensor is fed where it is: no copy per run, the values of
// the upload (a later change to the host tensor is not seen), beside a
// host feed; on the CPU alike.
TEST(DeviceFeeds, AreReadWhereTheyWereUploaded) {
  Fed f;
  AsyncDevice& counts = *f.device;
  Executor& exec = *f.exec;
  Executor cpu(f.g);
  ASSERT_OK_AND_ASSIGN(auto cpu_plan, cpu.Compile({f.y}));
  Tensor xs = T<float>({3}, {1, 2, 3});
  ASSERT_OK_AND_ASSIGN(DeviceTensor on_device, exec.Upload(xs));
  ASSERT_OK_AND_ASSIGN(DeviceTensor on_cpu, cpu.Upload(xs));
  EXPECT_EQ(on_device.TypeString(), "float32 (3,)");
  xs.data<float>()[0] = 100;
  const int copies = counts.async_copies + counts.copies_that_wait;
  for (float v : {0.5f, 1.5f}) {
    const Feeds host = {{f.b, T<float>({3}, {v, v, v})}};
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*f.plan, host, {{f.x, on_device}}, {}));
    EXPECT_EQ(AsDoubles(out[0]), std::vector<double>({1 + v, 4 + v, 9 + v}));
    ASSERT_OK_AND_ASSIGN(auto cpu_out, cpu.Run(*cpu_plan, host, {{f.x, on_cpu}}, {}));
    EXPECT_EQ(AsDoubles(cpu_out[0]), AsDoubles(out[0]));
  }
  EXPECT_EQ(counts.async_copies + counts.copies_that_wait - copies, 2);  // b's, one per run
}

TEST(DeviceFeeds, AreCheckedAsHostFeeds) {
  Fed f;
  Executor& exec = *f.exec;
  Executor other(f.g);
  Plan* plan = f.plan.get();
  const Feeds b = {{f.b, T<float>({3}, {0, 0, 0})}};
  ASSERT_OK_AND_ASSIGN(DeviceTensor four, exec.Upload(T<float>({4}, {1, 2, 3, 4})));
  ASSERT_OK_AND_ASSIGN(DeviceTensor three, exec.Upload(T<float>({3}, {1, 2, 3})));
  ASSERT_OK_AND_ASSIGN(DeviceTensor foreign, other.Upload(T<float>({3}, {1, 2, 3})));
  EXPECT_STATUS(exec.Run(*plan, b, {{f.x, four}}, {}).status(),
                absl::StatusCode::kInvalidArgument,
                "feed of 'x': expected float32 (3,), got float32 (4,)");
  EXPECT_STATUS(exec.Run(*plan, b, {{f.x, foreign}}, {}).status(),
                absl::StatusCode::kInvalidArgument,
                "device feed of 'x': its DeviceTensor was not uploaded by this executor");
  EXPECT_STATUS(exec.Run(*plan, b, {{f.x, DeviceTensor()}}, {}).status(),
                absl::StatusCode::kInvalidArgument, "was not uploaded by this executor");
  EXPECT_STATUS(exec.Run(*plan, {{f.x, T<float>({3}, {1, 2, 3})}}, {{f.x, three}}, {}).status(),
                absl::StatusCode::kInvalidArgument, "input 'x' is fed twice");
  EXPECT_STATUS(exec.Run(*plan, {}, {{f.x, three}}, {}).status(),
                absl::StatusCode::kInvalidArgument, "missing feed for input 'b'");
}

TEST(DeviceFeeds, AnUploadCountsAgainstTheMemoryLimit) {
  Graph g;
  Executor exec(g, {.memory_limit_bytes = 100});
  EXPECT_STATUS(exec.Upload(T<float>(Shape({26}), std::vector<float>(26, 1))).status(),
                absl::StatusCode::kResourceExhausted, "an uploaded float32 (26,) needs 104 bytes");
  ASSERT_OK_AND_ASSIGN(DeviceTensor fits, exec.Upload(T<float>({3}, {1, 2, 3})));
  EXPECT_EQ(exec.bytes_in_use(), 12);
}

models::TrainConfig SmallToy() {
  return {.model = {.vocab = 7, .seq_len = 6, .dim = 16, .heads = 2, .layers = 1, .ffn = 32},
          .min_len = 2, .run = {.batch = 4, .steps = 3}, .eval_size = 4};
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
  const std::string dir = testing::NewTempDir("device_transfers");
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
