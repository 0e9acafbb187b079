#include "models/gpt2/hf_export.h"

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/gpt/tokenizer.h"
#include "nlohmann/json.hpp"

namespace dagrad::models {
namespace {

using json = nlohmann::json;

// The fields of GPT2Config that dagrad's Gpt2 has no say in, as
// transformers' GPT2Config defaults them.
json FixedFields() {
  return {{"model_type", "gpt2"},
          {"architectures", {"GPT2LMHeadModel"}},
          {"add_cross_attention", false},
          {"reorder_and_upcast_attn", false},
          {"scale_attn_by_inverse_layer_idx", false},
          {"scale_attn_weights", true},
          {"tie_word_embeddings", true},
          {"use_cache", true},
          {"initializer_range", 0.02},
          {"pad_token_id", nullptr},
          {"dtype", "float32"},
          {"summary_activation", nullptr},
          {"summary_first_dropout", 0.1},
          {"summary_proj_to_labels", true},
          {"summary_type", "cls_index"},
          {"summary_use_proj", true}};
}

// ExportTensors is `model`'s tensors in float32 (a 16-bit file of
// ReadHfGpt2 widened) under the metadata save_pretrained writes: the names
// and layouts are already HF's (models/gpt2/gpt2.h).
absl::StatusOr<SafetensorsFile> ExportTensors(const SafetensorsFile& model) {
  SafetensorsFile out;
  out.metadata = {{"format", "pt"}};
  for (const auto& [name, tensor] : model.tensors) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor t, ConvertFloats(tensor, DType::kFloat32));
    out.tensors.emplace_back(name, std::move(t));
  }
  return out;
}

}  // namespace

std::string HfGpt2ConfigJson(const Gpt2Config& config, int64_t end_of_text) {
  json j = FixedFields();
  j["vocab_size"] = config.vocab;
  j["n_positions"] = config.positions;
  j["n_embd"] = config.dim;
  j["n_head"] = config.heads;
  j["n_layer"] = config.layers;
  j["n_inner"] = config.inner > 0 ? json(config.inner) : json(nullptr);
  j["activation_function"] = config.activation;
  j["layer_norm_epsilon"] = config.layer_norm_epsilon;
  j["attn_pdrop"] = config.attn_pdrop;
  j["embd_pdrop"] = config.embd_pdrop;
  j["resid_pdrop"] = config.resid_pdrop;
  const json id = end_of_text >= 0 ? json(end_of_text) : json(nullptr);
  j["bos_token_id"] = id;
  j["eos_token_id"] = id;
  return j.dump(2) + "\n";
}

absl::Status WriteHfGpt2(const SafetensorsFile& model, absl::string_view model_path,
                         absl::string_view tokenizer_dir, absl::string_view out_dir) {
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Config config, Gpt2Config::FromCheckpoint(model, model_path));
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer tokenizer,
                          Gpt2Tokenizer::LoadDirectory(std::string(tokenizer_dir)));
  if (tokenizer.vocab_size() > config.vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        PathInFolder(tokenizer_dir, "vocab.json"), " has ", tokenizer.vocab_size(),
        " tokens, more than the vocab_size ", config.vocab, " of the model ", model_path));
  }
  // Writing into the tokenizer's directory, or over the model file, would
  // replace the files this export reads (a pretrained model, a run's).
  const std::string out_model = PathInFolder(out_dir, "model.safetensors");
  const bool over_model = SameFile(out_model, std::string(model_path));
  if (over_model || SameFile(std::string(out_dir), std::string(tokenizer_dir))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the output directory '", out_dir, "' holds what the export reads (",
        over_model ? model_path : tokenizer_dir, "): write it to a directory of its own"));
  }
  std::error_code ec;
  std::filesystem::create_directories(std::string(out_dir), ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the output directory '", out_dir, "': ", ec.message()));
  }
  // The four files are one model: written as a set, so that a failure never
  // leaves new weights beside an earlier export's config.
  std::vector<std::pair<std::string, std::string>> files;
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile tensors, ExportTensors(model));
  DAGRAD_ASSIGN_OR_RETURN(std::string weights, SerializeSafetensors(tensors));
  files.emplace_back(out_model, std::move(weights));
  files.emplace_back(PathInFolder(out_dir, "config.json"),
                     HfGpt2ConfigJson(config, tokenizer.end_of_text()));
  for (const char* name : {"vocab.json", "merges.txt"}) {
    DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(PathInFolder(tokenizer_dir, name)));
    files.emplace_back(PathInFolder(out_dir, name), std::move(bytes));
  }
  return WriteFilesAtomically(files);
}

}  // namespace dagrad::models
