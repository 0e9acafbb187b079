// Sizes: checked size arithmetic (engine/checked_math.h), byte counts that
// no machine holds refused when the graph is built, memory budgets refused
// at Compile before anything is allocated, and the host's memory limits
// read from /proc and the cgroup files (engine/plan/host_memory.h).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "engine/checked_math.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/plan/host_memory.h"
#include "engine/plan/internal/plan_memory.h"
#include "engine/plan/memory_budget.h"
#include "models/toy/toy_trainer.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2to(int n) { return int64_t{1} << n; }

TEST(CheckedMath, AddAndMulReportOverflow) {
  EXPECT_EQ(CheckedAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMin, -1), std::nullopt);
  EXPECT_EQ(CheckedMul(k2to(31), k2to(31)), k2to(62));
  EXPECT_EQ(CheckedMul(k2to(32), k2to(31)), std::nullopt);
  EXPECT_EQ(CheckedMul(-1, kMin), std::nullopt);
  EXPECT_EQ(CheckedProduct({}), 1);
  EXPECT_EQ(CheckedProduct({k2to(40), k2to(40)}), std::nullopt);
  EXPECT_EQ(CheckedProduct({k2to(40), k2to(40), 0}), 0);  // empty: 0 whatever the rest
  EXPECT_EQ(CheckedProduct({3, 5, 7}), 105);
}

TEST(CheckedMath, BytesStayWithinTwoToThe62) {
  EXPECT_EQ(CheckedBytes(k2to(60), 4), k2to(62));
  EXPECT_EQ(CheckedBytes(k2to(60) + 1, 4), std::nullopt);
  EXPECT_EQ(CheckedBytes(k2to(61), 8), std::nullopt);  // 2^64 would wrap to 0
  EXPECT_EQ(CheckedBytes(k2to(62), 4), std::nullopt);
  EXPECT_EQ(CheckedBytes(-1, 4), std::nullopt);
  EXPECT_EQ(CheckedAlignUp(1, 64), 64);
  EXPECT_EQ(CheckedAlignUp(k2to(62), 64), k2to(62));
  EXPECT_EQ(CheckedAlignUp(kMax, 64), std::nullopt);
  EXPECT_EQ(HumanBytes(999), "999 B");
  EXPECT_EQ(HumanBytes(1000), "1 KB");
  EXPECT_EQ(HumanBytes(51'500'000'000), "51.5 GB");
  EXPECT_EQ(HumanBytes(256'000'000'000'000), "256 TB");
  EXPECT_EQ(HumanBytes(999'999), "1 MB");
  EXPECT_EQ(HumanBytes(kMax), "9.22 EB");
}

// len(range(n)[start:end:step]) from Python 3, for n in {0, 7}, start and
// end each of kBounds (row: start, column: end), step each of kSteps.
constexpr int64_t kBounds[] = {kMin, -8, -7, -1, 0, 1, 6, 7, 8, kMax};
constexpr int64_t kSteps[] = {kMin, -3, -1, 1, 2, kMax};
constexpr const char* kPythonLengthsOf7[] = {
    "0000000000000000000011000000001110110000110000000011101000001110110000111011000011101100001110110000",
    "0000000000000000000011000000003320220000110000000011101000003320220000332022000033202200003320220000",
    "0000000000000000000011000000007760650000110000000022101000007760650000776065000077606500007760650000",
    "0006016777000601677700060167770000000111000601677700050056660000000111000000000000000000000000000000",
    "0003013444000301344400030134440000000111000301344400030033330000000111000000000000000000000000000000",
    "0001011111000101111100010111110000000111000101111100010011110000000111000000000000000000000000000000",
};

TEST(SliceLength, MatchesPythonForHugeBoundsAndSteps) {
  for (int s = 0; s < 6; ++s) {
    for (int i = 0; i < 10; ++i) {
      for (int j = 0; j < 10; ++j) {
        const int64_t start = kBounds[i], end = kBounds[j], step = kSteps[s];
        EXPECT_EQ(SliceLength(7, start, end, step), kPythonLengthsOf7[s][i * 10 + j] - '0')
            << "range(7)[" << start << ":" << end << ":" << step << "]";
        EXPECT_EQ(SliceLength(0, start, end, step), 0);
      }
    }
  }
  EXPECT_EQ(SliceLength(7, 0, 7, 0), 0);  // Python raises; dagrad's Slice rejects step 0
}

TEST(SliceLength, TheSliceOpKeepsPythonsCount) {
  for (int s = 3; s < 6; ++s) {  // the op takes steps >= 1
    for (int i = 0; i < 10; ++i) {
      for (int j = 0; j < 10; ++j) {
        Graph g;
        Value x = g.Input("x", DType::kFloat32, {7});
        Value y = Slice(x, 0, kBounds[i], kBounds[j], kSteps[s]);
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_EQ(y.dim(0), kPythonLengthsOf7[s][i * 10 + j] - '0');
      }
    }
  }
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {7});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Slice(x, 0, 2, kMax, kMax), Slice(x, 0, kMin, kMax)},
                                         {{x, T<float>({7}, {0, 1, 2, 3, 4, 5, 6})}}));
  EXPECT_EQ(out[0].ToVector<float>(), std::vector<float>{2});
  EXPECT_EQ(out[1].num_elements(), 7);
  EXPECT_STATUS(Slice(x, 0, kMax, kMin, -1).status(), absl::StatusCode::kInvalidArgument,
                "step -1 < 1");
}

TEST(Sizes, ByteCountsNoMachineHoldsAreRefusedWhenBuilding) {
  Graph g;
  EXPECT_STATUS(g.Input("huge", DType::kFloat64, {k2to(61)}).status(),
                absl::StatusCode::kInvalidArgument,
                "input 'huge': float64 (2305843009213693952,) needs more than the 2^62 bytes");
  EXPECT_STATUS(g.Parameter("w", {k2to(31), k2to(31)}, Initializer::Zeros()).status(),
                absl::StatusCode::kInvalidArgument, "needs more than the 2^62 bytes");
  Value one = g.Constant(Tensor::Scalar<double>(1), "one");
  EXPECT_STATUS(BroadcastTo(one, Shape({k2to(61)})).status(), absl::StatusCode::kInvalidArgument,
                "broadcast_to 'broadcast_to': output: float64 (2305843009213693952,) needs more "
                "than the 2^62 bytes");
  Value onef = g.Constant(Tensor::Scalar<float>(1), "onef");
  EXPECT_STATUS(BroadcastTo(onef, Shape({k2to(31), k2to(31)})).status(),
                absl::StatusCode::kInvalidArgument, "needs more than the 2^62 bytes");
  Value x = g.Input("x", DType::kFloat32, {4});
  EXPECT_STATUS(Reshape(x, {k2to(32), k2to(32), -1}).status(), absl::StatusCode::kInvalidArgument,
                "overflows int64");
  EXPECT_STATUS(Tensor::Zeros(DType::kFloat64, {k2to(61)}).status(),
                absl::StatusCode::kInvalidArgument, "needs more than the 2^62 bytes");
}

TEST(Sizes, EmptyShapesWithHugeDimsRunWithoutOverflow) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {0});
  Value big = Reshape(x, {1, 0, k2to(62), k2to(62)});
  Value sliced = Slice(big, 2, 1, kMax, 3);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {sliced, Exp(sliced)}, {{x, T<float>({0}, {})}}));
  EXPECT_EQ(out[0].shape(), Shape({1, 0, (k2to(62) - 2) / 3 + 1, k2to(62)}));
  EXPECT_EQ(out[1].num_elements(), 0);
}

TEST(Sizes, PlanWhoseBuffersOverflowInt64IsRefused) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {k2to(60)});  // 2^62 bytes each
  Value a = Exp(x), b = Exp(a);
  Executor exec(g, {.check_host_memory = false});
  EXPECT_STATUS(exec.Compile({a, b}).status(), absl::StatusCode::kResourceExhausted,
                "the plan's intermediates overflow int64 bytes");
}

TEST(Sizes, CompileRefusesWhatTheHostCannotHold) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {k2to(58)});  // 1 EiB
  {
    Graph::Scope scope(g, "attention");
    Value scores = Exp(x);
    Executor exec(g);
    EXPECT_STATUS(exec.Compile({scores}).status(), absl::StatusCode::kResourceExhausted,
                  "compiling the plan on cpu needs 1.15 EB, over the memory limit of");
    EXPECT_EQ(exec.bytes_in_use(), 0);
  }
}

TEST(MemoryBudget, NamesNeedLimitCategoriesAndBiggestItems) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {1024, 1024});
  Value w = g.Parameter("w", {1024, 1024}, Initializer::Zeros());
  Value m = g.Variable("m", {1024}, Initializer::Zeros());
  Value y = Exp(x * w) + m;
  MemoryBudget data;
  data.Add("data", "evaluation set", 3'000'000);
  Executor exec(g, {.memory_limit_bytes = 6'000'000, .check_host_memory = false,
                    .reserved = data});
  EXPECT_STATUS(exec.Compile({y}).status(), absl::StatusCode::kResourceExhausted,
                "compiling the plan on cpu needs 11.4 MB, over the memory limit of 6 MB "
                "(ExecutorOptions::memory_limit_bytes 6 MB): arena 4.19 MB, parameters "
                "4.19 MB, data 3 MB, optimizer state 4.1 KB. Biggest: mul 'mul' float32 (1024, "
                "1024) = 4.19 MB; parameter 'w' float32 (1024, 1024) = 4.19 MB; evaluation set "
                "= 3 MB; variable 'm' float32 (1024,) = 4.1 KB");
  // What a plan holds counts against the limit of the next: its arena, and
  // the variables it will make at its first run (the next plan needs only
  // its own arena).
  Executor exec2(g, {.memory_limit_bytes = 9'000'000, .check_host_memory = false});
  ASSERT_OK_AND_ASSIGN(auto plan, exec2.Compile({y}));
  EXPECT_EQ(exec2.bytes_in_use(), 4'194'304 + 4'194'304 + 4'096);
  EXPECT_STATUS(exec2.Compile({y}).status(), absl::StatusCode::kResourceExhausted,
                "needs 4.19 MB, over the memory limit of 607 KB "
                "(ExecutorOptions::memory_limit_bytes 9 MB less 8.39 MB in use): arena 4.19 MB.");
  // Made, the variables are counted once.
  Executor exec3(g, {.memory_limit_bytes = 9'000'000, .check_host_memory = false});
  ASSERT_OK_AND_ASSIGN(auto plan3, exec3.Compile({y}));
  ASSERT_OK(exec3.Run(*plan3, {{x, Tensor::Zeros(DType::kFloat32, {1024, 1024}).value()}})
                .status());
  EXPECT_EQ(exec3.bytes_in_use(), 4'194'304 + 4'194'304 + 4'096);
}

// Plans compiled back to back, before any runs: the second's check counts
// the variables the first will make (they were left out, and the first
// run failed past the limit with the plans already allocated).
TEST(MemoryBudget, ThePlanCompiledNextCountsTheVariablesOfTheFirst) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {256, 1024});
  Value w = g.Parameter("w", {1024, 1024}, Initializer::Zeros());
  Value first = Sum(MatMul(x, w));
  Value second = Sum(Exp(x) + x);
  // Enough for the first plan (w and its arena) and for the second's arena
  // (exp's 1 MiB), but not for the two and w.
  Executor exec(g, {.memory_limit_bytes = 6'000'000, .check_host_memory = false});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({first}));
  EXPECT_STATUS(exec.Compile({second}).status(), absl::StatusCode::kResourceExhausted,
                "needs 1.05 MB, over the memory limit of 757 KB "
                "(ExecutorOptions::memory_limit_bytes 6 MB less 5.24 MB in use)");
  // A plan that goes before any run takes its reservations with it.
  plan.reset();
  EXPECT_EQ(exec.bytes_in_use(), 0);
  ASSERT_OK(exec.Compile({second}).status());
}

TEST(MemoryBudget, OverflowingTotalsAreReported) {
  MemoryBudget need;
  need.Add("arena", kMax);
  need.Add("data", "more", 1);
  EXPECT_EQ(need.total(), std::nullopt);
  EXPECT_STATUS(need.CheckFits({1000, "test"}, "it"), absl::StatusCode::kResourceExhausted,
                "it needs more than 9.22 EB, over the memory limit of 1 KB (test)");
}

class HostMemoryTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }
  HostMemoryFiles Files() {
    return {dir_ + "/meminfo", dir_ + "/self_cgroup", dir_ + "/cgroup"};
  }
  const std::string dir_ = FreshDir("host_memory");
};

TEST_F(HostMemoryTest, MemAvailableAlone) {
  Write("meminfo", "MemTotal:  4000 kB\nMemFree:  100 kB\nMemAvailable:    2000 kB\n");
  const auto room = HostMemoryAvailable(Files());
  ASSERT_TRUE(room.has_value());
  EXPECT_EQ(room->bytes, 2000 * 1024);
  EXPECT_THAT(room->source, ::testing::HasSubstr("MemAvailable"));
}

// Variables reserved by compiled plans are counted in use but not yet
// taken from the host: the host's room is MemAvailable less them.
TEST_F(HostMemoryTest, TheHostsRoomLeavesOutVariablesNotYetMade) {
  Write("meminfo", "MemAvailable: 2000 kB\n");
  const std::optional<MemoryLimit> room =
      MemoryLimitFor(0, /*in_use=*/1'500'000, /*unmade=*/500'000, /*host=*/true, 1, Files());
  ASSERT_TRUE(room.has_value());
  EXPECT_EQ(room->bytes, 2000 * 1024 - 500'000);
  EXPECT_THAT(room->source, ::testing::HasSubstr("less 500 KB of variables compiled plans will make"));
}

TEST_F(HostMemoryTest, CgroupV2RoomIsMaxLessCurrent) {
  Write("meminfo", "MemAvailable: 2000 kB\n");
  Write("self_cgroup", "0::/job\n");
  Write("cgroup/job/memory.max", "1000000\n");
  Write("cgroup/job/memory.current", "400000\n");
  auto room = HostMemoryAvailable(Files());
  ASSERT_TRUE(room.has_value());
  EXPECT_EQ(room->bytes, 600000);
  EXPECT_THAT(room->source, ::testing::HasSubstr("memory.max"));
  Write("cgroup/job/memory.max", "max\n");  // no limit: MemAvailable decides
  room = HostMemoryAvailable(Files());
  EXPECT_EQ(room->bytes, 2000 * 1024);
}

TEST_F(HostMemoryTest, CgroupV1AndAContainerMountedAtTheRoot) {
  Write("meminfo", "MemAvailable: 2000 kB\n");
  Write("self_cgroup", "5:cpu:/\n4:memory:/host/path\n");
  Write("cgroup/memory/memory.limit_in_bytes", "1500000\n");
  Write("cgroup/memory/memory.usage_in_bytes", "1000000\n");
  auto room = HostMemoryAvailable(Files());
  ASSERT_TRUE(room.has_value());
  EXPECT_EQ(room->bytes, 500000);
  Write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "none"
  EXPECT_EQ(HostMemoryAvailable(Files())->bytes, 2000 * 1024);
}

TEST_F(HostMemoryTest, NothingReadableIsNoLimit) {
  EXPECT_FALSE(HostMemoryAvailable(Files()).has_value());
  Write("meminfo", "MemAvailable: lots\n");
  EXPECT_FALSE(HostMemoryAvailable(Files()).has_value());
}

TEST(Names, EmptyNamesAreRejectedForEveryNodeKind) {
  Graph g;
  EXPECT_STATUS(g.Input("", DType::kFloat32, {2}).status(), absl::StatusCode::kInvalidArgument,
                "input '': empty name");
  EXPECT_STATUS(g.Parameter("", {2}, Initializer::Zeros()).status(),
                absl::StatusCode::kInvalidArgument, "parameter '': empty name");
  EXPECT_STATUS(g.Variable("", {2}, Initializer::Zeros()).status(),
                absl::StatusCode::kInvalidArgument, "variable '': empty name");
  EXPECT_STATUS(g.Constant(Tensor::Scalar<float>(1), "").status(),
                absl::StatusCode::kInvalidArgument, "constant '': empty name");
  EXPECT_STATUS(g.Constant(Tensor::Scalar<float>(1), "a/b").status(),
                absl::StatusCode::kInvalidArgument, "must not contain '/'");
  Value x = g.Input("x", DType::kFloat32, {2});
  EXPECT_EQ(Exp(x).path(), "exp");  // an op's empty name is its op's name
}

TEST(Names, EmptyScopesNeverMakeADoubleSlash) {
  Graph g;
  Graph::Scope a(g, "a");
  {
    Graph::Scope empty(g, "");
    EXPECT_EQ(g.Parameter("w", {2}, Initializer::Zeros()).path(), "a/w");
    Graph::Scope slashes(g, "/b//c/");
    EXPECT_EQ(g.Constant(Tensor::Scalar<float>(1), "k").path(), "a/b/c/k");
  }
  EXPECT_EQ(g.scope(), "a");
  Graph::ScopePathGuard guard(g, "grad//x/");
  EXPECT_EQ(g.scope(), "grad/x");
}

models::TrainConfig SmallTrainConfig() {
  models::TrainConfig c;
  c.model = {.vocab = 8, .seq_len = 8, .dim = 16, .heads = 2, .layers = 1, .ffn = 32};
  c.run.batch = 4;
  c.run.steps = 2;
  return c;
}

TEST(TrainerMemory, ParametersAndAdamStateOverTheLimitAreRefusedUpFront) {
  models::TrainConfig c = SmallTrainConfig();
  c.model.dim = 8192;
  c.model.ffn = 32768;
  c.model.layers = 4;
  c.run.memory_limit_bytes = int64_t{8} << 30;
  auto trainer = models::ToyTrainer::Create(c);
  EXPECT_STATUS(trainer.status(), absl::StatusCode::kResourceExhausted,
                "over the memory limit of 8.59 GB");
  EXPECT_THAT(std::string(trainer.status().message()),
              ::testing::AllOf(::testing::HasSubstr("parameters 12.9 GB"),
                               ::testing::HasSubstr("optimizer state 25.8 GB"),
                               ::testing::HasSubstr("float32 (32768, 8192) = 1.07 GB")));
}

TEST(TrainerMemory, HugeEvaluationSetOrSequencesAreCleanErrors) {
  models::TrainConfig c = SmallTrainConfig();
  c.eval_size = k2to(40);
  EXPECT_STATUS(models::ToyTrainer::Create(c).status(), absl::StatusCode::kResourceExhausted,
                "evaluation set int64 (1099511627776, 8) x2");
  c.eval_size = k2to(58);  // (2^58, 8) int64: 2^64 bytes
  EXPECT_STATUS(models::ToyTrainer::Create(c).status(), absl::StatusCode::kInvalidArgument,
                "needs more than the 2^62 bytes");
  c = SmallTrainConfig();
  c.model.seq_len = 100'000'000;
  EXPECT_FALSE(models::ToyTrainer::Create(c).ok());
  EXPECT_STATUS(models::TaskGenerator::Create({}, 0)->Batch(0, k2to(56)).status(),
                absl::StatusCode::kInvalidArgument, "needs more than the 2^62 bytes");
}

// The held-out set runs as one batch of its own: when that plan is what
// does not fit, the error says so (its shapes are not --batch's).
TEST(TrainerMemory, AnEvaluationPlanOverTheLimitIsNamed) {
  models::TrainConfig c = SmallTrainConfig();  // --batch 4
  c.eval_size = 4096;
  c.run.memory_limit_bytes = 2'000'000;
  EXPECT_STATUS(models::ToyTrainer::Create(c).status(), absl::StatusCode::kResourceExhausted,
                "the held-out evaluation (one batch of 4096 sequences): compiling the plan on "
                "cpu needs");
}

// The composed attention's (B, H, T, S) weights are what outgrows the
// machine here (the fused op never holds them).
TEST(CliMemory, TrainRefusesAModelTheMachineCannotHold) {
  const CliResult r = RunDagrad("train --seq_len=1000000 --attention=composed --steps=1 --out=" +
                                FreshDir("seq"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, ::testing::AllOf(::testing::HasSubstr("needs"),
                                      ::testing::HasSubstr("over the memory limit of"),
                                      ::testing::HasSubstr("(64, 4, 1000000, 1000000) = 1.02 PB")));
  const CliResult d = RunDagrad("train --dim=8192 --ffn=32768 --layers=4 --memory_limit_mb=4096 "
                                "--steps=1 --out=" + FreshDir("dim"));
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_THAT(d.err, ::testing::HasSubstr("optimizer state 25.8 GB"));
  // The library's error names its option; the program's names the flag.
  EXPECT_THAT(d.err, ::testing::HasSubstr("(--memory_limit_mb 4.29 GB)"));
  EXPECT_THAT(d.err, ::testing::Not(::testing::HasSubstr("ExecutorOptions")));
  const CliResult t = RunDagrad("train --seq_len=100000000 --attention=composed --steps=1 --out=" +
                                FreshDir("t"));
  EXPECT_EQ(t.code, 2) << t.err;
  EXPECT_THAT(t.err, ::testing::HasSubstr("needs more than the 2^62 bytes"));
}

// --memory_limit_mb is the process's: --replicas=8 gave each replica the
// whole limit, and the text task's data were not counted at all (the toy
// task's were). The same run that fits in 20 MiB on one replica is
// refused on eight, each with 1/8 of it, and its need names the data.
TEST(CliMemory, ReplicasShareTheLimitAndTheTextDataCountInIt) {
  const std::string data = WriteCorpus("memory_text", 60);
  const std::string run = "train --task=text --data=" + data +
                          " --seq_len=64 --dim=128 --heads=2 --layers=1 --batch=16 --steps=1 "
                          "--memory_limit_mb=20 --out=";
  const CliResult one = RunDagrad(run + FreshDir("one_replica") + " --threads=1");
  EXPECT_EQ(one.code, 0) << one.err;
  const CliResult eight = RunDagrad(run + FreshDir("eight_replicas") + " --replicas=8");
  EXPECT_EQ(eight.code, 1) << eight.err;
  EXPECT_THAT(eight.err, ::testing::AllOf(
                             ::testing::HasSubstr("over the memory limit of 2.62 MB "
                                                  "(--memory_limit_mb 21 MB, shared by 8 executors)"),
                             ::testing::HasSubstr("data ")));
}

}  // namespace
}  // namespace dagrad::testing
