// dagrad's side of the CPU comparison with PyTorch: the cases of
// tools/bench/torch_anchor.py, as Google Benchmarks.
//
//   ./build/tools/dagrad_bench --threads=1 [--benchmark_filter=mha] [--benchmark_format=json]
//
// Cases (masks: the last quarter of every sequence's keys is padding):
//   matmul_1024                      C = A·B, 1024^3, float32
//   mha_fwd_B{B}_T{T}_D{D}_H{H}      self-attention forward, no weights returned
//   mha_fwdbwd_B{B}_T{T}_D{D}_H{H}   forward + backward of sum(output)
//   toy_train_step                   ToyTransformer(vocab 16, T 32, D 128, H 4, L 2,
//                                    ffn 512, dropout 0.1), batch 64, reverse, Adam
//   gpt_train_step                   Gpt(T 64, D 128, H 4, L 4, dropout 0), batch 32,
//                                    AdamW, on a repeated text: gpt_compare.py's model
// Each runs its attention as the fused op (ops/attention.h); composed_<case>
// is the same case on the composed subgraph (nn::AttentionPath::kComposed),
// which compare.py sets beside it.
// Counters: "flops" (counted multiply-adds x 2 of the matrix products), and
// for the training step the plan's "peak_bytes" and "intermediate_bytes".
//
// The step-times mode, for tools/bench/contention.py: the toy or GPT
// training step above, --steps times after 2 warm-up steps (fewer, but at
// least 3, when --max_seconds pass first), each timed alone (wall clock),
// printed as one JSON line {"case": ..., "ms": [...]}:
//
//   ./build/tools/dagrad_bench --step_times=toy_train_step|gpt_train_step --steps=60 \
//       --threads=2 [--max_seconds=60] [--replicas=2]
//
// --replicas=N trains N replicas on N threads of their own instead, each on
// 1/N of the batch with one compute thread, summing gradients through
// ThreadCommunicators (engine/device/thread_communicator.h); a step's time
// is rank 0's, whose gradient sum waits for every rank.
//
// The op cases' timing mode (tests/autodiff/support/op_case.h; linked in when the
// tests are built, through tools/bench/op_timing.h):
//
//   ./build/tools/dagrad_bench --op=softmax[,matmul,...]|all [--threads=1]
//   ./build/tools/dagrad_bench --op_coverage
//
// --op times each named case's graph at its benchmark size (float32; the
// label says "bench", or the config whose size it fell back to) as
// op/NAME/forward and, when it has a gradient, op/NAME/forward_backward;
// --op_coverage prints which modes (gradcheck, cuda, isa, timing) cover
// each op, and exits 1 when one is incomplete.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/device/thread_communicator.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt_trainer.h"
#include "models/nn/attention.h"
#include "models/toy/toy_trainer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tools/bench/bench_main.h"
#include "tools/bench/op_timing.h"

namespace dagrad {
namespace {

void Fail(benchmark::State& state, const absl::Status& st) {
  state.SkipWithError(std::string(st.message()).c_str());
}

void BM_Matmul1024(benchmark::State& state) {
  const int64_t n = 1024;
  Graph g;
  Value a = g.Input("a", DType::kFloat32, {n, n});
  Value b = g.Input("b", DType::kFloat32, {n, n});
  Executor exec(g);
  auto plan = exec.Compile({}, {MatMul(a, b)});
  if (!plan.ok()) return Fail(state, plan.status());
  auto zeros = Tensor::Zeros(DType::kFloat32, {n, n});
  if (!zeros.ok()) return Fail(state, zeros.status());
  const Feeds feeds = {{a, *zeros}, {b, *zeros}};
  for (auto _ : state) {
    if (auto out = exec.Run(**plan, feeds); !out.ok()) return Fail(state, out.status());
  }
  state.counters["flops"] = 2.0 * n * n * n;
}

// FLOPs of self-attention's matrix products: 4 projections of (B*T, D, D),
// q·kᵀ and weights·v of (B*H, T, T, D/H) each.
double MhaFlops(int64_t B, int64_t T, int64_t D) {
  return 2.0 * (4.0 * B * T * D * D + 2.0 * B * T * T * D);
}

void BM_Mha(benchmark::State& state, int64_t B, int64_t T, int64_t D, int64_t H,
            bool backward, nn::AttentionPath path) {
  Graph g;
  auto mha = nn::MultiheadAttention::Create(g, "mha",
                                            {.embed_dim = D, .num_heads = H, .attention = path});
  if (!mha.ok()) return Fail(state, mha.status());
  Value x = g.Input("x", DType::kFloat32, {B, T, D});
  Value lengths = g.Input("lengths", DType::kInt64, {B});
  Value y = (*mha)(x, x, x, {.valid_lens = lengths}).output;
  std::vector<Value> targets = {y};
  if (backward) {
    std::vector<Value> wrt = mha->parameters();
    wrt.push_back(x);
    auto grads = Gradients(Sum(y), wrt);
    if (!grads.ok()) return Fail(state, grads.status());
    targets = *grads;
  }
  Executor exec(g);
  auto plan = exec.Compile({}, targets);
  if (!plan.ok()) return Fail(state, plan.status());
  std::vector<int64_t> lens(B, T - T / 4);
  auto x_value = Tensor::Zeros(DType::kFloat32, {B, T, D});
  if (!x_value.ok()) return Fail(state, x_value.status());
  auto lengths_value = Tensor::FromVector<int64_t>({B}, lens);
  if (!lengths_value.ok()) return Fail(state, lengths_value.status());
  const Feeds feeds = {{x, *x_value}, {lengths, *lengths_value}};
  for (auto _ : state) {
    if (auto out = exec.Run(**plan, feeds); !out.ok()) return Fail(state, out.status());
  }
  state.counters["flops"] = MhaFlops(B, T, D) * (backward ? 3 : 1);
  state.counters["peak_bytes"] = static_cast<double>((*plan)->peak_bytes());
  state.counters["intermediate_bytes"] = static_cast<double>((*plan)->intermediate_bytes());
}

// FLOPs of a toy training step's matrix products, forward x 3 (each has
// two gradient products): per layer the packed QKV, output and two
// feed-forward projections over B*T rows and attention's two products,
// then the vocabulary head.
double ToyStepFlops(const models::ToyConfig& m, int64_t batch) {
  const double rows = static_cast<double>(batch) * m.seq_len, E = m.dim;
  const double layer = rows * E * (4 * E + 2 * m.ffn) + 2.0 * batch * m.seq_len * m.seq_len * E;
  return 3 * 2 * (m.layers * layer + rows * E * m.vocab);
}

// A GPT training step on a text file of a repeated pangram, with the model
// and batch tools/bench/gpt_compare.py trains by default; data parallel
// over `parallel`'s ranks.
absl::StatusOr<std::unique_ptr<models::GptTrainer>> GptBenchTrainer(
    nn::AttentionPath path, const DataParallelOptions& parallel = {}) {
  const int rank = parallel.communicator ? parallel.communicator->rank() : 0;
  const std::string file = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                        "/dagrad_bench_text_", getpid(), "_", rank, ".txt");
  {
    std::ofstream out(file);
    for (int i = 0; i < 200; ++i) out << "The quick brown fox jumps over the lazy dog. ";
  }
  models::TextTrainConfig config;
  config.data = file;
  config.model = {.block_size = 64, .dim = 128, .heads = 4, .layers = 4, .dropout = 0.0,
                  .attention = path};
  config.run.batch = 32;
  config.run.steps = 1 << 30;
  auto trainer = models::GptTrainer::Create(config, CpuDevice(), parallel);
  std::filesystem::remove(file);
  return trainer;
}

void BM_GptTrainStep(benchmark::State& state, nn::AttentionPath path) {
  auto trainer = GptBenchTrainer(path);
  if (!trainer.ok()) return Fail(state, trainer.status());
  for (auto _ : state) {
    if (auto r = (*trainer)->Step(); !r.ok()) return Fail(state, r.status());
  }
}

models::TrainConfig ToyBenchConfig(nn::AttentionPath path) {
  models::TrainConfig config;
  config.model = {.vocab = 16, .seq_len = 32, .dim = 128, .heads = 4, .layers = 2, .ffn = 512,
                  .dropout = 0.1, .attention = path};
  config.run.batch = 64;
  config.run.steps = 1 << 30;
  return config;
}

void BM_ToyTrainStep(benchmark::State& state, nn::AttentionPath path) {
  const models::TrainConfig config = ToyBenchConfig(path);
  auto trainer = models::ToyTrainer::Create(config);
  if (!trainer.ok()) return Fail(state, trainer.status());
  for (auto _ : state) {
    if (auto r = (*trainer)->Step(); !r.ok()) return Fail(state, r.status());
  }
  state.counters["flops"] = ToyStepFlops(config.model, config.run.batch);
  state.counters["peak_bytes"] = static_cast<double>((*trainer)->train_plan().peak_bytes());
  state.counters["intermediate_bytes"] =
      static_cast<double>((*trainer)->train_plan().intermediate_bytes());
}

// Paths are the attention paths each case runs on, by name prefix.
std::vector<std::pair<std::string, nn::AttentionPath>> Paths() {
  return {{"", nn::AttentionPath::kFused}, {"composed_", nn::AttentionPath::kComposed}};
}

void Register() {
  auto ms = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  ms(benchmark::RegisterBenchmark("matmul_1024", BM_Matmul1024));
  for (const auto& [B, T, D, H] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{32, 64, 128, 4},
                                   {16, 128, 256, 8},
                                   {8, 256, 512, 8}}) {
    const std::string shape = absl::StrCat("B", B, "_T", T, "_D", D, "_H", H);
    for (auto [prefix, path] : Paths()) {
      ms(benchmark::RegisterBenchmark((prefix + "mha_fwd_" + shape).c_str(), BM_Mha, B, T, D, H,
                                      false, path));
      ms(benchmark::RegisterBenchmark((prefix + "mha_fwdbwd_" + shape).c_str(), BM_Mha, B, T, D,
                                      H, true, path));
    }
  }
  for (auto [prefix, path] : Paths()) {
    ms(benchmark::RegisterBenchmark((prefix + "toy_train_step").c_str(), BM_ToyTrainStep, path));
    ms(benchmark::RegisterBenchmark((prefix + "gpt_train_step").c_str(), BM_GptTrainStep, path));
  }
}

// The ops --op names ("all": every case).
std::vector<std::string>& OpsToTime() {
  static auto* ops = new std::vector<std::string>();
  return *ops;
}

void BM_Op(benchmark::State& state, const std::string& name, bool backward) {
  absl::StatusOr<OpTimingGraph> t = GetOpTimingSource()->build(name);
  if (!t.ok()) return Fail(state, t.status());
  Executor exec(*t->graph);
  auto plan = exec.Compile(backward ? t->backward : t->forward);
  if (!plan.ok()) return Fail(state, plan.status());
  uint64_t step = 0;
  for (auto _ : state) {
    auto out = exec.Run(**plan, t->feeds, {.training = t->training, .step = ++step});
    if (!out.ok()) return Fail(state, out.status());
  }
  state.SetLabel(t->size);
}

void RegisterOps() {
  auto ms = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  for (const std::string& name : OpsToTime()) {
    absl::StatusOr<OpTimingGraph> t = GetOpTimingSource()->build(name);
    ms(benchmark::RegisterBenchmark(("op/" + name + "/forward").c_str(), BM_Op, name, false));
    if (t.ok() && t->backward.empty()) continue;  // nothing differentiable
    ms(benchmark::RegisterBenchmark(("op/" + name + "/forward_backward").c_str(), BM_Op, name,
                                    true));
  }
}

// OpMode handles --op=... and --op_coverage, taking them out of argv:
// nullopt to go on, else the exit status.
std::optional<int> OpMode(int& argc, char** argv) {
  int kept = 1;
  bool coverage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--op=", 0) == 0) {
      OpsToTime() = absl::StrSplit(arg.substr(5), ',', absl::SkipEmpty());
    } else if (arg == "--op_coverage") {
      coverage = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!coverage && OpsToTime().empty()) return std::nullopt;
  const OpTimingSource* source = GetOpTimingSource();
  if (source == nullptr) {
    std::fprintf(stderr, "no op cases in this build (configure with DAGRAD_BUILD_TESTS=ON)\n");
    return 2;
  }
  if (OpsToTime() == std::vector<std::string>{"all"}) OpsToTime() = source->names();
  if (!coverage) return std::nullopt;
  absl::StatusOr<OpCoverageReport> report = source->coverage();
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  std::fputs(report->table.c_str(), stdout);
  return report->complete ? 0 : 1;
}

using TrainerMaker = std::function<absl::StatusOr<std::unique_ptr<models::Trainer>>(
    const DataParallelOptions&)>;

// TimeSteps runs steps of the trainer `make` builds until `more` says
// stop, and returns their wall times in ms, the first 2 left out.
// `more(times)` runs on rank 0, whose answer every rank follows.
absl::StatusOr<std::vector<double>> TimeSteps(
    const TrainerMaker& make, const DataParallelOptions& parallel,
    const std::function<bool(const std::vector<double>&)>& more) {
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<models::Trainer> trainer, make(parallel));
  std::vector<double> ms;
  for (int i = 0;; ++i) {
    bool go = more(ms);
    if (parallel.communicator) {
      DAGRAD_RETURN_IF_ERROR(parallel.communicator->Broadcast(&go, sizeof(go), 0));
    }
    if (!go) return ms;
    const auto start = std::chrono::steady_clock::now();
    DAGRAD_RETURN_IF_ERROR(trainer->Step().status());
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (i >= 2) ms.push_back(took.count());
  }
}

// StepTimes prints the wall time of each of `steps` steps of the trainer
// `make` builds after 2 untimed ones, stopping early (after 3 at least)
// past `seconds`: of one trainer, or of `replicas` on threads of their own
// (rank 0's times).
int StepTimes(const std::string& name, const TrainerMaker& make, int steps, double seconds,
              int replicas) {
  const auto begin = std::chrono::steady_clock::now();
  const auto more = [&](const std::vector<double>& ms) {
    const double passed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    return static_cast<int>(ms.size()) < steps && !(ms.size() >= 3 && passed > seconds);
  };
  std::vector<absl::StatusOr<std::vector<double>>> times(replicas);
  if (replicas == 1) {
    times[0] = TimeSteps(make, {}, more);
  } else {
    OnThreadRanks(replicas, [&](std::shared_ptr<Communicator> rank) {
      const int r = rank->rank();
      times[r] = TimeSteps(make, {.communicator = std::move(rank)}, more);
    });
  }
  for (const auto& t : times) {
    if (!t.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), t.status().ToString().c_str());
      return 1;
    }
  }
  std::printf("{\"case\": \"%s\", \"ms\": [%s]}\n", name.c_str(),
              absl::StrJoin(*times[0], ", ", [](std::string* out, double v) {
                absl::StrAppend(out, absl::SixDigits(v));
              }).c_str());
  return 0;
}

// StepTimesMode handles --step_times=CASE --steps=N (with --threads=N,
// --max_seconds=S and --replicas=N):
// nullopt when --step_times is absent, else the exit status.
std::optional<int> StepTimesMode(int argc, char** argv) {
  std::string name;
  int steps = 50, threads = 0, replicas = 1;
  double seconds = 1e9;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--step_times=", 0) == 0) name = arg.substr(13);
    if (arg.rfind("--steps=", 0) == 0 && !absl::SimpleAtoi(arg.substr(8), &steps)) steps = -1;
    if (arg.rfind("--threads=", 0) == 0 && !absl::SimpleAtoi(arg.substr(10), &threads)) threads = -1;
    if (arg.rfind("--max_seconds=", 0) == 0 && !absl::SimpleAtod(arg.substr(14), &seconds)) seconds = -1;
    if (arg.rfind("--replicas=", 0) == 0 && !absl::SimpleAtoi(arg.substr(11), &replicas)) replicas = -1;
  }
  if (name.empty()) return std::nullopt;
  if (steps < 1 || threads < 0 || !(seconds > 0) || replicas < 1 || replicas > 64 ||
      (name != "toy_train_step" && name != "gpt_train_step")) {
    std::fprintf(stderr, "usage: --step_times=toy_train_step|gpt_train_step --steps=N>=1 "
                         "[--threads=N>=0] [--max_seconds=S>0] [--replicas=1..64]\n");
    return 2;
  }
  absl::Status st = ConfigureCpu();
  // Replicas compute on one thread each.
  if (st.ok() && (threads > 0 || replicas > 1)) st = SetNumThreads(replicas > 1 ? 1 : threads);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 2;
  }
  const nn::AttentionPath fused = nn::AttentionPath::kFused;
  const TrainerMaker make = [&](const DataParallelOptions& parallel)
      -> absl::StatusOr<std::unique_ptr<models::Trainer>> {
    if (name == "gpt_train_step") return GptBenchTrainer(fused, parallel);
    return models::ToyTrainer::Create(ToyBenchConfig(fused), CpuDevice(), parallel);
  };
  return StepTimes(name, make, steps, seconds, replicas);
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) {
  if (std::optional<int> status = dagrad::StepTimesMode(argc, argv)) return *status;
  if (std::optional<int> status = dagrad::OpMode(argc, argv)) return *status;
  return dagrad::BenchMain(argc, argv,
                           dagrad::OpsToTime().empty() ? dagrad::Register : dagrad::RegisterOps, 0);
}
