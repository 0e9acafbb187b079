// GPT-2 124M's shape (n_embd 768, 12 layers of 12 heads, vocab 50257, 1024
// positions: models/gpt2/gpt2.h) with random weights, on the CPU:
//   gpt2_124m/generate/N  N tokens (32, 96) after an 8-token prompt,
//                         greedy, with the KV cache (models::Generator);
//                         counter tokens_per_second. The prompt's tokens
//                         run through the cache one by one too; a cached
//                         token's own cost is (time(96) - time(32)) / 64.
//   gpt2_124m/train_step  one AdamW training step at T = 1024, B = 1
//                         (models::LmTrainer), on random tokens
//
//   ./build/tools/gpt2_bench --threads=1 [--benchmark_filter=generate]

#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/random_tensor.h"
#include "models/generator.h"
#include "models/gpt2/gpt2.h"
#include "models/lm_trainer.h"
#include "tools/bench/bench_main.h"

namespace dagrad {
namespace {

constexpr int64_t kWindow = 1024;

// GPT-2 124M's, without the dropouts (transformers' 0.1 each) that its
// training step would draw: the step PERFORMANCE.md's table measured.
const models::Gpt2Config kConfig{.attn_pdrop = 0, .embd_pdrop = 0, .resid_pdrop = 0};

// RandomWeights: N(0, 0.02) for every parameter of the model, by name.
absl::StatusOr<SafetensorsFile> RandomWeights() {
  Graph g;
  auto model = models::Gpt2::Builder(kConfig)(g);
  if (!model.ok()) return model.status();
  SafetensorsFile weights;
  uint64_t seed = 1;
  for (const Value& p : (*model)->parameters()) {
    auto t = RandomNormal(DType::kFloat32, p.shape(), 0.0, 0.02, seed++);
    if (!t.ok()) return t.status();
    weights.tensors.push_back({CheckpointName(p.node()), *t});
  }
  return weights;
}

// RandomTokens: a batch of one window of random tokens and their targets.
absl::StatusOr<models::TokenBatch> RandomTokens(uint64_t seed) {
  auto tokens = RandomUniform(DType::kFloat64, {1, kWindow}, 0, kConfig.vocab, seed);
  if (!tokens.ok()) return tokens.status();
  std::vector<int64_t> ids(kWindow);
  for (int64_t i = 0; i < kWindow; ++i) ids[i] = static_cast<int64_t>(tokens->data<double>()[i]);
  models::TokenBatch b;
  auto x = Tensor::FromVector<int64_t>({1, kWindow}, ids);
  if (!x.ok()) return x.status();
  b.tokens = b.targets = *x;
  return b;
}

void Generate(benchmark::State& state) {
  absl::StatusOr<SafetensorsFile> weights = RandomWeights();
  absl::StatusOr<std::unique_ptr<models::Generator>> gen =
      weights.ok() ? models::Generator::Create(models::Gpt2::Builder(kConfig), *weights)
                   : weights.status();
  if (!gen.ok()) return state.SkipWithError(std::string(gen.status().message()).c_str());
  const std::vector<int64_t> prompt = {464, 2068, 7586, 21831, 18045, 625, 262, 16931};
  for (auto _ : state) {
    auto more = (*gen)->Generate(prompt, {.tokens = state.range(0), .sampling = {.temperature = 0}});
    if (!more.ok()) return state.SkipWithError(std::string(more.status().message()).c_str());
  }
  state.counters["tokens_per_second"] =
      benchmark::Counter(state.range(0) * state.iterations(), benchmark::Counter::kIsRate);
}

void TrainStep(benchmark::State& state) {
  models::LmData data{.train = [](uint64_t step, int64_t) { return RandomTokens(step); },
                      .validation = [](int64_t first, int64_t) { return RandomTokens(1000 + first); },
                      .validation_windows = 1,
                      .window = kWindow};
  auto trainer = models::LmTrainer::Create(
      models::Gpt2::Builder(kConfig), data,
      {.run = {.batch = 1, .steps = 1 << 20,
               .optimizer = {.kind = OptimizerKind::kAdamW, .weight_decay = 0.1}}});
  if (!trainer.ok()) return state.SkipWithError(std::string(trainer.status().message()).c_str());
  for (auto _ : state) {
    auto step = (*trainer)->Step();
    if (!step.ok()) return state.SkipWithError(std::string(step.status().message()).c_str());
  }
}

void Register() {
  benchmark::RegisterBenchmark("gpt2_124m/generate", Generate)
      ->Arg(32)->Arg(96)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
  benchmark::RegisterBenchmark("gpt2_124m/train_step", TrainStep)
      ->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) { return dagrad::BenchMain(argc, argv, dagrad::Register, 0); }
