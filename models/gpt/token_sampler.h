// models/gpt/token_sampler.h
//
// TokenSampler draws the next token from a row of logits with the library's
// sampling ops (ops/sampling.h), in a graph of their own (on the CPU unless
// given another device):
//
//   temperature 0:  ArgMax(logits)                      greedy; ties: the first
//   otherwise:      Multinomial(Softmax((logits - max) / temperature), seed)
//                   (a temperature near 0 is greedy, never NaN)
//   top_k > 0:      the same over the logits not below the top_k-th largest
//                   (ties with it kept, as Hugging Face's TopKLogitsWarper)
//   top_p < 1:      the same over the nucleus (Holtzman et al. 2019, as Hugging
//                   Face's TopPLogitsWarper): the fewest most likely tokens (of
//                   the top_k when set) whose probabilities sum to top_p or more:
//                   token i of the sorted probabilities p is kept iff
//                   p_0 + ... + p_{i-1} < top_p (CumSum, exclusive), so the
//                   most likely token always is
//
// Draw number i of a run is Multinomial's draw at run step i (Philox
// stream {seed, kMultinomialStream, i}), so a seed reproduces a sample on
// the CPU and on CUDA alike, and another seed draws another.
//
//   // setup: SamplerLogits
//   DAGRAD_ASSIGN_OR_RETURN(auto sampler,
//       TokenSampler::Create(256, {.temperature = 0.8, .top_k = 40, .top_p = 0.95, .seed = 1}));
//   DAGRAD_ASSIGN_OR_RETURN(int64_t next, sampler->Sample(logits, /*draw=*/0));

#ifndef DAGRAD_MODELS_GPT_TOKEN_SAMPLER_H_
#define DAGRAD_MODELS_GPT_TOKEN_SAMPLER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/graph.h"

namespace dagrad::models {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy; else finite and > 0
  int64_t top_k = 0;         // 0: every token; else >= 1 (more than vocab: all)
  double top_p = 1.0;        // in (0, 1]; 1: every token (of the top_k)
  uint64_t seed = 0;
};

// CheckSampling returns InvalidArgument naming a bad temperature, top_k or
// top_p.
absl::Status CheckSampling(const SamplingOptions& options);

class TokenSampler {
 public:
  // Create builds and compiles the sampling graph for logits of `vocab`
  // (>= 1) tokens: CheckSampling's errors, InvalidArgument for vocab < 1.
  static absl::StatusOr<std::unique_ptr<TokenSampler>> Create(
      int64_t vocab, const SamplingOptions& options,
      std::unique_ptr<Device> device = CpuDevice());

  // Sample returns the token drawn from `logits` (vocab of them) as draw
  // number `draw`: InvalidArgument for another count of logits.
  absl::StatusOr<int64_t> Sample(absl::Span<const float> logits, uint64_t draw);

 private:
  TokenSampler() = default;

  int64_t vocab_ = 0;
  Graph graph_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<Plan> plan_;
  Value logits_, next_;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_TOKEN_SAMPLER_H_
