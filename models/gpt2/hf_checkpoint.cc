#include "models/gpt2/hf_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "nlohmann/json.hpp"

namespace dagrad::models {
namespace {

using json = nlohmann::json;

constexpr absl::string_view kWeights = "model.safetensors";
constexpr absl::string_view kIndex = "model.safetensors.index.json";
constexpr absl::string_view kPrefix = "transformer.";

// The causal-mask buffers of older GPT-2 files: h.<l>.attn.bias and
// h.<l>.attn.masked_bias (c_attn.bias and c_proj.bias end otherwise).
bool IsMaskBuffer(absl::string_view name) {
  return absl::EndsWith(name, ".attn.bias") || absl::EndsWith(name, ".attn.masked_bias");
}

bool SameTensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// NormaliseNames gives every tensor GPT2LMHeadModel's name, dropping the
// mask buffers and a tied head stored twice.
absl::Status NormaliseNames(SafetensorsFile& file, absl::string_view path) {
  SafetensorsFile out;
  out.metadata = std::move(file.metadata);
  std::optional<Tensor> head;
  for (auto& [name, tensor] : file.tensors) {
    if (IsMaskBuffer(name)) continue;
    if (name == "lm_head.weight") {
      head = std::move(tensor);
      continue;
    }
    const bool bare = !absl::StartsWith(name, kPrefix);
    out.tensors.emplace_back(bare ? absl::StrCat(kPrefix, name) : std::move(name),
                             std::move(tensor));
  }
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < out.tensors.size(); ++i) {
    if (out.tensors[i].first == out.tensors[i - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": tensor '", out.tensors[i].first, "' is stored with and without 'transformer.'"));
    }
  }
  const Tensor* wte = out.Find("transformer.wte.weight");
  if (head.has_value() && (wte == nullptr || !SameTensor(*head, *wte))) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": tensor 'lm_head.weight' differs from 'transformer.wte.weight'; dagrad's GPT-2 "
              "ties the head to the embedding"));
  }
  file = std::move(out);
  return absl::OkStatus();
}

// ReadWeightMap parses the index: its "weight_map", tensor -> shard file,
// each shard a file name in the directory.
absl::StatusOr<std::map<std::string, std::string>> ReadWeightMap(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
      !j["weight_map"].is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object with an object field 'weight_map'"));
  }
  std::map<std::string, std::string> map;
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    const std::string file = shard.is_string() ? shard.get<std::string>() : "";
    if (file.empty() || absl::StrContains(file, "/") || file == "." || file == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": field 'weight_map' maps '", tensor, "' to ",
          shard.is_string() ? absl::StrCat("'", file, "'") : shard.type_name(),
          ", not a file name in the model's directory"));
    }
    map[tensor] = file;
  }
  return map;
}

// ReadShards reads every shard the index names and merges their tensors,
// each of which the index must map to the shard holding it.
absl::StatusOr<SafetensorsFile> ReadShards(absl::string_view dir, const std::string& index) {
  DAGRAD_ASSIGN_OR_RETURN(auto weight_map, ReadWeightMap(index));
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : weight_map) shards.insert(shard);
  SafetensorsFile merged;
  for (const std::string& shard : shards) {
    const std::string path = PathInFolder(dir, shard);
    absl::StatusOr<SafetensorsFile> read = ReadSafetensors(path);
    if (absl::IsNotFound(read.status())) {  // not "no index": the index is there
      return absl::InvalidArgumentError(
          absl::StrCat(index, " names shard ", shard, ", which is missing (",
                       read.status().message(), ")"));
    }
    if (!read.ok()) return read.status();
    SafetensorsFile part = *std::move(read);
    for (auto& [name, tensor] : part.tensors) {
      auto it = weight_map.find(name);
      if (it == weight_map.end() || it->second != shard) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": tensor '", name, "' is not mapped to this shard by ", index));
      }
      weight_map.erase(it);
      merged.tensors.emplace_back(name, std::move(tensor));
    }
  }
  if (!weight_map.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(index, ": tensor '", weight_map.begin()->first, "' is not in its shard ",
                     PathInFolder(dir, weight_map.begin()->second)));
  }
  return merged;
}

}  // namespace

absl::StatusOr<Gpt2Config> ReadHfGpt2Config(absl::string_view dir) {
  const std::string path = PathInFolder(dir, "config.json");
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseHfGpt2Config(text, path);
}

namespace {

// ReadWeights is ReadHfWeights, and sets `source` to the file it read
// (model.safetensors or the index), which messages name.
absl::StatusOr<SafetensorsFile> ReadWeights(absl::string_view dir, std::string& source) {
  source = PathInFolder(dir, kWeights);
  absl::StatusOr<SafetensorsFile> file = ReadSafetensors(source);
  if (absl::IsNotFound(file.status())) {
    source = PathInFolder(dir, kIndex);
    file = ReadShards(dir, source);
    if (absl::IsNotFound(file.status())) {
      return absl::NotFoundError(absl::StrCat(dir, ": neither ", kWeights, " nor ", kIndex,
                                              " is there (", file.status().message(), ")"));
    }
  }
  if (!file.ok()) return file.status();
  DAGRAD_RETURN_IF_ERROR(NormaliseNames(*file, source));
  for (auto& [name, t] : file->tensors) {  // F64: as transformers loads it, in float32
    if (t.dtype() == DType::kFloat64) {
      DAGRAD_ASSIGN_OR_RETURN(t, ConvertFloats(t, DType::kFloat32));
    }
  }
  return file;
}

}  // namespace

absl::StatusOr<SafetensorsFile> ReadHfWeights(absl::string_view dir) {
  std::string source;
  return ReadWeights(dir, source);
}

absl::StatusOr<HfGpt2Files> ReadHfGpt2(absl::string_view dir) {
  HfGpt2Files files;
  std::string source;
  DAGRAD_ASSIGN_OR_RETURN(files.config, ReadHfGpt2Config(dir));
  DAGRAD_ASSIGN_OR_RETURN(files.weights, ReadWeights(dir, source));
  files.weights.metadata = files.config.ToMetadata();
  absl::Status fits = Gpt2Config::FromCheckpoint(files.weights, source).status();
  if (!fits.ok()) {
    return absl::Status(fits.code(), absl::StrCat(PathInFolder(dir, "config.json"),
                                                  " describes another model than its weights: ",
                                                  fits.message()));
  }
  return files;
}

absl::StatusOr<HfGpt2> LoadHfGpt2(Graph& g, absl::string_view dir,
                                  const LanguageModelOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2(dir));
  files.config.attention = options.attention;
  DAGRAD_ASSIGN_OR_RETURN(Gpt2 model, Gpt2::Create(g, files.config));
  return HfGpt2{.model = std::make_unique<Gpt2>(std::move(model)),
                .weights = std::move(files.weights)};
}

}  // namespace dagrad::models
