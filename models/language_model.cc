#include "models/language_model.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/gpt/gpt.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/toy/transformer.h"
#include "ops/fill.h"

namespace dagrad::models {
namespace {

// Build makes the built-in model of Config's checkpoint.
template <typename Config, typename Model>
absl::StatusOr<std::unique_ptr<LanguageModel>> Build(Graph& g, const SafetensorsFile& checkpoint,
                                                     absl::string_view path,
                                                     const LanguageModelOptions& options) {
  absl::StatusOr<Config> config = Config::FromCheckpoint(checkpoint, path);
  if (!config.ok()) return config.status();
  config->attention = options.attention;
  absl::StatusOr<Model> model = Model::Create(g, *config);
  if (!model.ok()) return model.status();
  return std::make_unique<Model>(*std::move(model));
}

absl::flat_hash_map<std::string, LanguageModelFactory>& Registry() {
  static auto* registry = new absl::flat_hash_map<std::string, LanguageModelFactory>{
      {"gpt", Build<GptConfig, Gpt>},
      {"gpt2", Build<Gpt2Config, Gpt2>},
      {"toy", Build<ToyConfig, ToyTransformer>},
  };
  return *registry;
}

}  // namespace

Value LanguageModel::Logits(Value tokens, Value) const {
  if (!tokens.ok()) return tokens;
  if (tokens.rank() != 2) {
    return tokens.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "logits: tokens must be (B, T), got ", tokens.shape().ToString())));
  }
  return ForwardCached(tokens, Arange(*tokens.graph(), 0, tokens.dim(1), 1, DType::kInt64), {});
}

Value LanguageModel::ForwardCached(Value tokens, Value, absl::Span<nn::KvCache>) const {
  return tokens.graph()->Error(absl::UnimplementedError(
      "this model has no KV cache (LanguageModel::kv_cache is nullopt)"));
}

absl::StatusOr<std::unique_ptr<LanguageModel>> BuildModel(const ModelBuilder& build, Graph& g) {
  if (!build) return absl::InvalidArgumentError("the model builder is empty");
  absl::StatusOr<std::unique_ptr<LanguageModel>> model = build(g);
  if (model.ok() && *model == nullptr) {
    return absl::InvalidArgumentError("the model builder returned no model");
  }
  if (model.ok() && !g.status().ok()) return g.status();
  return model;
}

absl::Status RegisterLanguageModel(const std::string& kind, LanguageModelFactory factory) {
  if (!Registry().emplace(kind, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat("a model kind '", kind, "' is registered"));
  }
  return absl::OkStatus();
}

std::string ModelKind(const std::map<std::string, std::string>& metadata) {
  auto it = metadata.find("model");
  return it == metadata.end() ? "toy" : it->second;
}

namespace {

std::string KnownKinds() {
  std::vector<std::string> known;
  for (const auto& [name, factory] : Registry()) known.push_back(name);
  std::sort(known.begin(), known.end());
  return absl::StrJoin(known, ", ");
}

}  // namespace

namespace {

// DropTrainingState leaves a training checkpoint (Trainer::SaveCheckpoint:
// its metadata's dagrad.format is "...-train-state/N") its parameters, which
// are named as in the model file: the optimizer's tensors go.
void DropTrainingState(SafetensorsFile& file) {
  auto format = file.metadata.find("dagrad.format");
  if (format == file.metadata.end() || !absl::StrContains(format->second, "train-state/")) return;
  std::erase_if(file.tensors,
                [](const auto& named) { return absl::StartsWith(named.first, "optimizer."); });
}

}  // namespace

absl::Status RefuseRunDirectory(const std::string& path) {
  if (!IsDirectory(path) || PathExists(PathInFolder(path, "config.json")) ||
      (!PathExists(PathInFolder(path, "model.safetensors")) &&
       !PathExists(PathInFolder(path, "checkpoint.safetensors")))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, " is a dagrad training run's folder, not a model: give ",
      PathInFolder(path, "model.safetensors"), " (or its checkpoint.safetensors, for a run "
      "stopped before its end)"));
}

absl::StatusOr<SafetensorsFile> ReadModelFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadCheckpoint(path));
    DropTrainingState(file);
    return file;
  }
  DAGRAD_RETURN_IF_ERROR(RefuseRunDirectory(path));
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files hf, ReadHfGpt2(path));
  return std::move(hf.weights);
}

absl::StatusOr<std::unique_ptr<LanguageModel>> LoadLanguageModel(
    Graph& g, const SafetensorsFile& checkpoint, absl::string_view path,
    const LanguageModelOptions& options) {
  const std::string kind = ModelKind(checkpoint.metadata);
  auto it = Registry().find(kind);
  if (it == Registry().end()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": metadata 'model' is '", kind,
                                                   "', not a model this program knows (",
                                                   KnownKinds(), ")"));
  }
  absl::StatusOr<std::unique_ptr<LanguageModel>> model = it->second(g, checkpoint, path, options);
  if (!model.ok() && checkpoint.metadata.count("model") == 0) {
    // Not the toy transformer's file either, which names no model.
    return absl::Status(model.status().code(),
                        absl::StrCat(path, ": metadata 'model' is missing (", KnownKinds(),
                                     "), and as the toy transformer's: ",
                                     model.status().message()));
  }
  return model;
}

}  // namespace dagrad::models
