// models/generator.h
//
// Generation with any trained causal LanguageModel (models/language_model.h:
// the GPT, or a user's model): greedy or sampled (temperature, top-k,
// Philox-seeded), with a KV cache when the model has one.
//
// Train, then sample:
//
//   // setup: SavedGpt
//   DAGRAD_ASSIGN_OR_RETURN(auto gen, Generator::Load("run/model.safetensors"));
//   const std::string prompt = "Copyright ";
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> more,
//       gen->Generate(BytesToTokens(prompt),
//                     {.tokens = 200, .sampling = {.temperature = 0.8, .top_k = 40, .seed = 1}}));
//   std::cout << prompt << TokensToBytes(more);
//
// (Generator::Create builds the model with a function of a graph and takes
// the weights as a SafetensorsFile, e.g. the CollectVariables of a training
// executor, to sample without a file.)
//
// The context. The model sees at most block_size = max_len() tokens: the
// last block_size of prompt + generated so far (a sliding window), unpadded
// (a ShapeFamily over its length: engine/shape_family.h).
//
// The KV cache (a model whose kv_cache() is set, as the GPT's; others
// recompute the window for every token). While the sequence fits the window, every token, of the
// prompt too, runs through the model once, as one position: its keys and
// values are kept on the executor, in variables of (1, H, block_size, Dh)
// per layer that the step's plan writes in place at the token's position
// (WriteAt, ops/write_at.h), and the new token attends to them: token n
// costs one position's projections and MLP and an attention over n keys,
// and a run feeds the token, its position and which slots to attend to,
// nothing of the cache. Positions are learned and absolute, so once the
// window slides every kept key belongs to another position (token t moves
// from position p to p - 1), and the cache would have to be rebuilt for
// every new token: from then on each token recomputes the whole window
// (block_size positions, attention over block_size^2 pairs), exactly what
// the model computes on it and what generation without the cache costs.
// The cache pays for the first block_size tokens of prompt and output
// only. Greedy output with and without the cache is the same, before and
// after the window slides (generator_test.cc).
//
// Sampling (models/gpt/token_sampler.h, with the library's ArgMax, TopK and
// Multinomial ops). Temperature 0 is greedy (argmax, the first of equal
// maxima). Otherwise token i of a run is drawn from softmax(logits /
// temperature), restricted to the top_k largest logits when top_k > 0, with
// Multinomial's Philox draw at step i: a seed reproduces a sample.

#ifndef DAGRAD_MODELS_GENERATOR_H_
#define DAGRAD_MODELS_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/io/safetensors.h"
#include "engine/shape_family.h"
#include "models/gpt/token_sampler.h"
#include "models/language_model.h"

namespace dagrad::models {

struct GenerateOptions {
  int64_t tokens = 100;  // how many to generate, >= 0
  SamplingOptions sampling;
  bool kv_cache = true;  // false: recompute the window for every token
  // on_token, if set, sees each new token as soon as it is drawn, e.g. to
  // print the text as it grows:
  //   GenerateOptions printing{
  //       .on_token = [](int64_t t) { std::cout << TokensToBytes({t}) << std::flush; }};
  std::function<void(int64_t)> on_token;
};

// CheckGenerateOptions returns InvalidArgument for tokens < 0 and
// CheckSampling's errors: what Generate checks before it draws.
absl::Status CheckGenerateOptions(const GenerateOptions& options);

// Bytes as tokens (0..255) and back (each token taken modulo 256).
std::vector<int64_t> BytesToTokens(absl::string_view bytes);
std::string TokensToBytes(absl::Span<const int64_t> tokens);

class Generator {
 public:
  // Create builds the model with `build` in a graph of its own and loads
  // `weights` (checkpoint names, as the model's parameters have them):
  // `build`'s errors, InvalidArgument for a model that is not causal, then
  // AssignVariables's errors.
  static absl::StatusOr<std::unique_ptr<Generator>> Create(
      const ModelBuilder& build, const SafetensorsFile& weights,
      std::unique_ptr<Device> device = CpuDevice());
  // Load reads a model LoadLanguageModel knows: a checkpoint, or a Hugging
  // Face GPT-2 directory (ReadModelFile's and LoadLanguageModel's errors,
  // then Create's); its
  // attention runs by options.attention, which the metadata do not say.
  static absl::StatusOr<std::unique_ptr<Generator>> Load(
      const std::string& path, std::unique_ptr<Device> device = CpuDevice(),
      const LanguageModelOptions& options = {});

  // Generate returns options.tokens new tokens following `prompt`.
  // InvalidArgument for an empty prompt, a token outside [0, vocab) or bad
  // options.
  absl::StatusOr<std::vector<int64_t>> Generate(
      absl::Span<const int64_t> prompt, const GenerateOptions& options);

  const LanguageModel& model() const { return *model_; }

 private:
  Generator() = default;
  absl::Status Build(const SafetensorsFile& weights, std::unique_ptr<Device> device);
  // BuildCacheStep adds the graph of one cached step (kv_cache()'s shape):
  // its logits, and the writes of its keys and values into the cache.
  absl::Status BuildCacheStep(const KvCacheShape& kv, std::vector<Value>& fetches,
                              std::vector<Value>& writes);
  // The logits after the last token of `window` (<= block_size tokens).
  absl::StatusOr<std::vector<float>> WindowLogits(
      absl::Span<const int64_t> window);
  // The logits after `token` at `position`, attending to the cached
  // positions before it; its keys and values join the cache.
  absl::StatusOr<std::vector<float>> CachedLogits(int64_t token,
                                                  int64_t position);

  // Declared first, so destroyed last: the model and plans refer to it.
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<LanguageModel> model_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<ShapeFamily> window_;  // the window's logits, per length
  std::unique_ptr<Plan> step_plan_;
  Value step_token_, step_position_;
  // Per layer, the past keys and values: variables (1, H, block_size, Dh).
  std::vector<nn::KvCache> cache_;
  Value keep_;         // their keep, fed cache_keep_
  Tensor cache_keep_;  // bool (block_size): the slots attended to
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GENERATOR_H_
