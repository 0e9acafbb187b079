#include "models/gpt/gpt_generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"

namespace dagrad::models {
std::vector<int64_t> BytesToTokens(absl::string_view bytes) {
  std::vector<int64_t> tokens(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    tokens[i] = static_cast<unsigned char>(bytes[i]);
  return tokens;
}

std::string TokensToBytes(absl::Span<const int64_t> tokens) {
  std::string bytes(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i)
    bytes[i] = static_cast<char>(tokens[i] & 0xff);
  return bytes;
}

absl::StatusOr<std::unique_ptr<GptGenerator>> GptGenerator::Create(
    const GptConfig& config, const SafetensorsFile& weights,
    std::unique_ptr<Device> device) {
  DAGRAD_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<GptGenerator> gen(new GptGenerator());
  gen->config_ = config;
  DAGRAD_RETURN_IF_ERROR(gen->Build(weights, std::move(device)));
  return gen;
}

absl::StatusOr<std::unique_ptr<GptGenerator>> GptGenerator::Load(
    const std::string& path, std::unique_ptr<Device> device, nn::AttentionPath attention) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadCheckpoint(path));
  DAGRAD_ASSIGN_OR_RETURN(GptConfig config, GptConfig::FromCheckpoint(file, path));
  config.attention = attention;
  return Create(config, file, std::move(device));
}

absl::Status GptGenerator::Build(const SafetensorsFile& weights,
                                 std::unique_ptr<Device> device) {
  const GptConfig& c = config_;
  graph_ = std::make_unique<Graph>();
  Graph& g = *graph_;
  DAGRAD_ASSIGN_OR_RETURN(model_, Gpt::Create(g, c));
  window_tokens_ = g.Input("window_tokens", DType::kInt64, {1, c.block_size});
  window_logits_ = model_(window_tokens_);
  const int64_t P = c.block_size - 1, H = c.heads, Dh = c.dim / c.heads;
  std::vector<Value> step_fetches;
  if (P > 0) {  // with block_size 1 there is nothing to cache
    for (int64_t l = 0; l < c.layers; ++l) {
      past_.keys.push_back(
          g.Input(absl::StrCat("past_keys_", l), c.dtype, {1, H, P, Dh}));
      past_.values.push_back(
          g.Input(absl::StrCat("past_values_", l), c.dtype, {1, H, P, Dh}));
      for (std::vector<Tensor>* cache : {&cache_keys_, &cache_values_}) {
        DAGRAD_ASSIGN_OR_RETURN(Tensor zeros,
                                Tensor::Zeros(c.dtype, {1, H, P, Dh}));
        cache->push_back(std::move(zeros));
      }
    }
    past_.keep = g.Input("past_keep", DType::kBool, {P});
    DAGRAD_ASSIGN_OR_RETURN(cache_keep_, Tensor::Zeros(DType::kBool, {P}));
    step_token_ = g.Input("step_token", DType::kInt64, {1, 1});
    step_position_ = g.Input("step_position", DType::kInt64, {1});
    step_ = model_.Forward(step_token_,
                           {.positions = step_position_, .past = &past_});
    step_fetches = {step_.logits};
    for (int64_t l = 0; l < c.layers; ++l) {
      step_fetches.push_back(step_.keys[l]);
      step_fetches.push_back(step_.values[l]);
    }
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  exec_ = std::make_unique<Executor>(g, std::move(device));
  DAGRAD_RETURN_IF_ERROR(
      AssignVariables(*exec_, model_.parameters(), weights, "gpt weights"));
  DAGRAD_ASSIGN_OR_RETURN(window_plan_, exec_->Compile({window_logits_}));
  if (P > 0) {
    DAGRAD_ASSIGN_OR_RETURN(step_plan_, exec_->Compile(step_fetches));
  }
  return absl::OkStatus();
}

namespace {

// Row copies row `t` of logits (1, T, V) as floats.
std::vector<float> Row(const Tensor& logits, int64_t t) {
  const int64_t V = logits.shape()[2];
  std::vector<float> row(V);
  if (const float* f = logits.data<float>()) {
    std::copy(f + t * V, f + (t + 1) * V, row.begin());
  } else {
    const double* d = logits.data<double>() + t * V;
    for (int64_t v = 0; v < V; ++v) row[v] = static_cast<float>(d[v]);
  }
  return row;
}

// StoreSlot writes fresh (1, H, 1, Dh) into slot p of cache (1, H, P, Dh).
void StoreSlot(const Tensor& fresh, int64_t p, Tensor& cache) {
  const int64_t H = cache.shape()[1], P = cache.shape()[2],
                Dh = cache.shape()[3];
  const size_t bytes = SizeOf(cache.dtype());
  const char* src = static_cast<const char*>(fresh.raw_data());
  char* dst = static_cast<char*>(cache.raw_data());
  for (int64_t h = 0; h < H; ++h) {
    std::memcpy(dst + ((h * P + p) * Dh) * bytes, src + h * Dh * bytes,
                Dh * bytes);
  }
}

}  // namespace

absl::StatusOr<std::vector<float>> GptGenerator::WindowLogits(
    absl::Span<const int64_t> window) {
  // Right-padding is exact: a causal model's row t never sees positions > t.
  DAGRAD_ASSIGN_OR_RETURN(
      Tensor tokens, Tensor::Zeros(DType::kInt64, {1, config_.block_size}));
  std::copy(window.begin(), window.end(), tokens.data<int64_t>());
  DAGRAD_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      exec_->Run(*window_plan_, {{window_tokens_, tokens}}));
  return Row(out[0], static_cast<int64_t>(window.size()) - 1);
}

absl::StatusOr<std::vector<float>> GptGenerator::CachedLogits(
    int64_t token, int64_t position) {
  const int64_t P = config_.block_size - 1;
  bool* keep = cache_keep_.data<bool>();
  for (int64_t p = 0; p < P; ++p) keep[p] = p < position;
  DAGRAD_ASSIGN_OR_RETURN(Tensor token_tensor,
                          Tensor::FromVector<int64_t>({1, 1}, {token}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor position_tensor,
                          Tensor::FromVector<int64_t>({1}, {position}));
  Feeds feeds = {{step_token_, token_tensor},
                 {step_position_, position_tensor},
                 {past_.keep, cache_keep_}};
  for (int64_t l = 0; l < config_.layers; ++l) {
    feeds.push_back({past_.keys[l], cache_keys_[l]});
    feeds.push_back({past_.values[l], cache_values_[l]});
  }
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*step_plan_, feeds));
  if (position < P) {  // the last position's keys are never attended to
    for (int64_t l = 0; l < config_.layers; ++l) {
      StoreSlot(out[1 + 2 * l], position, cache_keys_[l]);
      StoreSlot(out[2 + 2 * l], position, cache_values_[l]);
    }
  }
  return Row(out[0], 0);
}

absl::StatusOr<std::vector<int64_t>> GptGenerator::Generate(
    absl::Span<const int64_t> prompt, const GenerateOptions& options) {
  DAGRAD_RETURN_IF_ERROR(CheckSampling(options.sampling));
  if (options.tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("generate: tokens must be >= 0, got ", options.tokens));
  }
  if (prompt.empty())
    return absl::InvalidArgumentError("generate: the prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= config_.vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat("generate: prompt token ", i, " is ", prompt[i],
                       ", outside [0, ", config_.vocab, ")"));
    }
  }
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<TokenSampler> sampler,
                          TokenSampler::Create(config_.vocab, options.sampling));
  const int64_t block = config_.block_size;
  const bool cache = options.kv_cache && step_plan_ != nullptr;
  std::vector<int64_t> seq(prompt.begin(), prompt.end());
  int64_t cached = 0;  // positions whose keys and values are in the cache
  for (int64_t i = 0; i < options.tokens; ++i) {
    const int64_t n = static_cast<int64_t>(seq.size());
    std::vector<float> logits;
    if (cache && n <= block) {
      while (cached < n) {
        DAGRAD_ASSIGN_OR_RETURN(logits, CachedLogits(seq[cached], cached));
        ++cached;
      }
    } else {
      const int64_t start = std::max<int64_t>(0, n - block);
      DAGRAD_ASSIGN_OR_RETURN(
          logits, WindowLogits(absl::MakeConstSpan(seq).subspan(start)));
    }
    DAGRAD_ASSIGN_OR_RETURN(
        const int64_t next,
        sampler->Sample(logits, static_cast<uint64_t>(i)));
    seq.push_back(next);
    if (options.on_token) options.on_token(next);
  }
  return std::vector<int64_t>(seq.begin() + prompt.size(), seq.end());
}

}  // namespace dagrad::models
