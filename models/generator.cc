#include "models/generator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "ops/write_at.h"

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

absl::StatusOr<std::unique_ptr<Generator>> Generator::Create(
    const ModelBuilder& build, const SafetensorsFile& weights, std::unique_ptr<Device> device) {
  std::unique_ptr<Generator> gen(new Generator());
  gen->graph_ = std::make_unique<Graph>();
  DAGRAD_ASSIGN_OR_RETURN(gen->model_, BuildModel(build, *gen->graph_));
  if (!gen->model_->causal()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generation continues causal models only; this one (model=",
        ModelKind(gen->model_->Metadata()), ") sees every position of its input"));
  }
  DAGRAD_RETURN_IF_ERROR(gen->Build(weights, std::move(device)));
  return gen;
}

absl::StatusOr<std::unique_ptr<Generator>> Generator::Load(
    const std::string& path, std::unique_ptr<Device> device, const LanguageModelOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadModelFile(path));
  return Create([&](Graph& g) { return LoadLanguageModel(g, file, path, options); }, file,
                std::move(device));
}

absl::Status Generator::Build(const SafetensorsFile& weights, std::unique_ptr<Device> device) {
  Graph& g = *graph_;
  std::vector<Value> step_fetches, step_writes;
  const std::optional<KvCacheShape> kv = model_->kv_cache();
  // With block_size 1 there is nothing to cache.
  if (kv && model_->max_len() > 1) {
    DAGRAD_RETURN_IF_ERROR(BuildCacheStep(*kv, step_fetches, step_writes));
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  exec_ = std::make_unique<Executor>(g, std::move(device));
  DAGRAD_RETURN_IF_ERROR(AssignVariables(*exec_, model_->parameters(), weights, "model weights"));
  // The window is the real prefix, unpadded: a plan per length, the last
  // few kept.
  DAGRAD_ASSIGN_OR_RETURN(
      window_, ShapeFamily::Create(
                   g, *exec_,
                   {.inputs = {{"window_tokens", DType::kInt64, {1, "seq"}}},
                    .bounds = {{"seq", model_->max_len()}}, .max_plans = 2},
                   [this](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
                     return Specialized{.fetches = {model_->Logits(b.input("window_tokens"))}};
                   }));
  if (!step_fetches.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(step_plan_, exec_->Compile(step_fetches, step_writes));
  }
  return absl::OkStatus();
}

absl::Status Generator::BuildCacheStep(const KvCacheShape& kv, std::vector<Value>& fetches,
                                      std::vector<Value>& writes) {
  Graph& g = *graph_;
  // One slot per position: the last position's keys are written too, never read.
  const int64_t P = model_->max_len(), H = kv.heads, Dh = kv.head_dim;
  keep_ = g.Input("past_keep", DType::kBool, {P});
  {
    Graph::Scope scope(g, "kv_cache");
    for (int64_t l = 0; l < kv.layers; ++l) {
      cache_.push_back(
          {.past_keys = g.Variable(absl::StrCat("keys_", l), {1, H, P, Dh},
                                   Initializer::Zeros(), kv.dtype),
           .past_values = g.Variable(absl::StrCat("values_", l), {1, H, P, Dh},
                                     Initializer::Zeros(), kv.dtype),
           .keep = keep_});
    }
  }
  DAGRAD_ASSIGN_OR_RETURN(cache_keep_, Tensor::Zeros(DType::kBool, {P}));
  step_token_ = g.Input("step_token", DType::kInt64, {1, 1});
  step_position_ = g.Input("step_position", DType::kInt64, {1});
  fetches = {model_->ForwardCached(step_token_, step_position_, absl::MakeSpan(cache_))};
  for (int64_t l = 0; l < kv.layers; ++l) {
    const nn::KvCache& layer = cache_[l];
    if (layer.keys.is_null() || layer.values.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "generate: ForwardCached did not set layer ", l, "'s keys and values, of the ",
          kv.layers, " layers kv_cache() says"));
    }
    writes.push_back(WriteAt(layer.past_keys, layer.keys, step_position_, 2));
    writes.push_back(WriteAt(layer.past_values, layer.values, step_position_, 2));
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

}  // namespace

absl::StatusOr<std::vector<float>> Generator::WindowLogits(
    absl::Span<const int64_t> window) {
  const int64_t n = static_cast<int64_t>(window.size());
  DAGRAD_ASSIGN_OR_RETURN(
      Tensor tokens, Tensor::FromVector<int64_t>({1, n}, {window.begin(), window.end()}));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, window_->Run({{"window_tokens", tokens}}));
  return Row(out[0], n - 1);
}

absl::StatusOr<std::vector<float>> Generator::CachedLogits(
    int64_t token, int64_t position) {
  bool* keep = cache_keep_.data<bool>();
  for (int64_t p = 0; p < cache_keep_.num_elements(); ++p) keep[p] = p < position;
  DAGRAD_ASSIGN_OR_RETURN(Tensor token_tensor,
                          Tensor::FromVector<int64_t>({1, 1}, {token}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor position_tensor,
                          Tensor::FromVector<int64_t>({1}, {position}));
  // The plan writes this position's keys and values into the cache
  // variables after the logits are computed from the earlier ones.
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*step_plan_, {{step_token_, token_tensor},
                                                   {step_position_, position_tensor},
                                                   {keep_, cache_keep_}}));
  return Row(out[0], 0);
}

absl::Status CheckGenerateOptions(const GenerateOptions& options) {
  if (options.tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens must be >= 0, got ", options.tokens));
  }
  return CheckSampling(options.sampling);
}

absl::StatusOr<std::vector<int64_t>> Generator::Generate(
    absl::Span<const int64_t> prompt, const GenerateOptions& options) {
  if (absl::Status st = CheckGenerateOptions(options); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("generate: ", st.message()));
  }
  if (prompt.empty())
    return absl::InvalidArgumentError("generate: the prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= model_->vocab()) {
      return absl::InvalidArgumentError(
          absl::StrCat("generate: prompt token ", i, " is ", prompt[i],
                       ", outside [0, ", model_->vocab(), ")"));
    }
  }
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<TokenSampler> sampler,
                          TokenSampler::Create(model_->vocab(), options.sampling));
  const int64_t block = model_->max_len();
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
