#include "models/gpt2/hf_config.h"

#include <array>
#include <cmath>
#include <exception>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/gpt2/gpt2.h"
#include "models/nn/module.h"
#include "nlohmann/json.hpp"
#include "ops/dropout.h"

namespace dagrad::models {
namespace {

using json = nlohmann::json;

// The largest size a field may give: far above any model's, and small
// enough that the products of sizes (3 n_embd, vocab x n_embd) fit in int64.
constexpr int64_t kMaxSize = int64_t{1} << 24;

// Shown is a value as a message shows it: a number, string or literal as
// JSON (at most 64 characters), an array or object by its type alone
// (dumping one nested a million deep would recurse that deep).
std::string Shown(const json& j) {
  if (j.is_structured()) return absl::StrCat("an ", j.type_name());
  std::string text = j.dump();
  return text.size() <= 64 ? text : absl::StrCat(text.substr(0, 61), "...");
}

absl::Status FieldError(absl::string_view path, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": field '", field, "' ", what));
}

// The integer fields of config.json and where they go.
using IntegerField = std::pair<const char*, int64_t Gpt2Config::*>;
constexpr std::array<IntegerField, 5> kIntegerFields = {{{"vocab_size", &Gpt2Config::vocab},
                                                         {"n_positions", &Gpt2Config::positions},
                                                         {"n_embd", &Gpt2Config::dim},
                                                         {"n_head", &Gpt2Config::heads},
                                                         {"n_layer", &Gpt2Config::layers}}};

// The dropout fields of config.json and where they go.
using DropoutField = std::pair<const char*, double Gpt2Config::*>;
constexpr std::array<DropoutField, 3> kDropoutFields = {
    {{"attn_pdrop", &Gpt2Config::attn_pdrop},
     {"embd_pdrop", &Gpt2Config::embd_pdrop},
     {"resid_pdrop", &Gpt2Config::resid_pdrop}}};

absl::Status ReadInteger(const json& j, absl::string_view path, const char* field,
                         int64_t& out) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(path, field, "is missing");
  if (!it->is_number_integer()) {
    return FieldError(path, field, absl::StrCat("is not an integer: ", Shown(*it)));
  }
  // An integer above int64's range is unsigned in nlohmann; get<int64_t>
  // would wrap it negative.
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return FieldError(path, field, absl::StrCat("is ", it->get<uint64_t>(), ", too large"));
  }
  out = it->get<int64_t>();
  return absl::OkStatus();
}

// RefuseIfSet fails when `field` is present with a value other than `ok`.
absl::Status RefuseIfSet(const json& j, absl::string_view path, const char* field,
                         const json& ok) {
  auto it = j.find(field);
  if (it == j.end() || *it == ok) return absl::OkStatus();
  return FieldError(path, field,
                    absl::StrCat("is ", Shown(*it), "; dagrad supports only ", ok.dump()));
}

absl::Status RefuseUnsupported(const json& j, absl::string_view path) {
  DAGRAD_RETURN_IF_ERROR(RefuseIfSet(j, path, "model_type", "gpt2"));
  DAGRAD_RETURN_IF_ERROR(RefuseIfSet(j, path, "scale_attn_by_inverse_layer_idx", false));
  DAGRAD_RETURN_IF_ERROR(RefuseIfSet(j, path, "reorder_and_upcast_attn", false));
  DAGRAD_RETURN_IF_ERROR(RefuseIfSet(j, path, "add_cross_attention", false));
  DAGRAD_RETURN_IF_ERROR(RefuseIfSet(j, path, "scale_attn_weights", true));
  return RefuseIfSet(j, path, "tie_word_embeddings", true);
}

// ReadOptional fills the fields with defaults: n_inner, layer_norm_epsilon
// and activation_function.
absl::Status ReadOptional(const json& j, absl::string_view path, Gpt2Config& c) {
  if (auto it = j.find("n_inner"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return FieldError(path, "n_inner", absl::StrCat("must be null or an integer >= 1, got ",
                                                      Shown(*it)));
    }
    c.inner = it->get<int64_t>();
  }
  if (auto it = j.find("layer_norm_epsilon"); it != j.end()) {
    if (!it->is_number()) {
      return FieldError(path, "layer_norm_epsilon", absl::StrCat("is not a number: ", Shown(*it)));
    }
    c.layer_norm_epsilon = it->get<double>();
  }
  if (auto it = j.find("activation_function"); it != j.end()) {
    if (!it->is_string()) {
      return FieldError(path, "activation_function",
                        absl::StrCat("is not a string: ", Shown(*it)));
    }
    c.activation = it->get<std::string>();
  }
  return absl::OkStatus();
}

// ReadDropouts reads the dropout fields that are present; the others keep
// GPT2Config's default.
absl::Status ReadDropouts(const json& j, absl::string_view path, Gpt2Config& c) {
  for (const auto& [field, member] : kDropoutFields) {
    auto it = j.find(field);
    if (it == j.end()) continue;
    if (!it->is_number()) {
      return FieldError(path, field, absl::StrCat("is not a number: ", Shown(*it)));
    }
    c.*member = it->get<double>();
  }
  return absl::OkStatus();
}

absl::Status ConfigMetadataError(absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("checkpoint metadata: '", key, "' ", what));
}

// DropoutsFromMetadata reads the dropout keys, 0 for each one absent (a
// file written before Gpt2 had dropouts, whose model trained without).
absl::Status DropoutsFromMetadata(const std::map<std::string, std::string>& m, Gpt2Config& c) {
  for (const auto& [key, member] : kDropoutFields) {
    c.*member = 0.0;
    auto it = m.find(key);
    if (it != m.end() && !absl::SimpleAtod(it->second, &(c.*member))) {
      return ConfigMetadataError(key, absl::StrCat("is not a number: '", it->second, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<nn::Activation> Gpt2Activation(absl::string_view name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") {
    return nn::Activation::kGeluTanh;
  }
  if (name == "gelu") return nn::Activation::kGelu;
  if (name == "relu") return nn::Activation::kRelu;
  return absl::InvalidArgumentError(absl::StrCat(
      "field 'activation_function' is '", name,
      "'; dagrad supports gelu_new, gelu_pytorch_tanh, gelu_fast, gelu and relu"));
}

absl::Status Gpt2Config::Validate() const {
  for (const auto& [field, member] : kIntegerFields) {
    if (this->*member < 1 || this->*member > kMaxSize) {
      return FieldError("gpt2 config", field,
                        absl::StrCat("must be in [1, ", kMaxSize, "], got ", this->*member));
    }
  }
  if (inner < 0 || inner > kMaxSize) {
    return FieldError("gpt2 config", "n_inner",
                      absl::StrCat("must be null or in [1, ", kMaxSize, "], got ", inner));
  }
  if (dim % heads != 0) {
    return FieldError("gpt2 config", "n_embd",
                      absl::StrCat(dim, " is not a multiple of field 'n_head' ", heads));
  }
  if (!(layer_norm_epsilon > 0) || !std::isfinite(layer_norm_epsilon)) {
    return FieldError("gpt2 config", "layer_norm_epsilon",
                      absl::StrCat("must be a finite number > 0, got ", layer_norm_epsilon));
  }
  for (const auto& [field, member] : kDropoutFields) {
    if (absl::Status p = ValidateDropout(this->*member); !p.ok()) {
      return FieldError("gpt2 config", field, absl::StrCat("is out of range: ", p.message()));
    }
  }
  if (!IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt2 config: dtype must be float32 or float64, got ", DTypeName(dtype)));
  }
  absl::StatusOr<nn::Activation> activation_ok = Gpt2Activation(activation);
  if (!activation_ok.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt2 config: ", activation_ok.status().message()));
  }
  return absl::OkStatus();
}

// ParseObject parses config.json's text: a parse error names where
// ("not JSON: parse error at line 3, column 7: ..."), as vocab.json's do.
absl::StatusOr<json> ParseObject(absl::string_view text, absl::string_view path) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON: ", JsonErrorText(e.what())));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON: ", JsonErrorText(e.what())));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is JSON ", j.type_name(), ", not an object"));
  }
  return j;
}

absl::StatusOr<Gpt2Config> ParseHfGpt2Config(absl::string_view text, absl::string_view path) {
  DAGRAD_ASSIGN_OR_RETURN(const json j, ParseObject(text, path));
  DAGRAD_RETURN_IF_ERROR(RefuseUnsupported(j, path));
  Gpt2Config c;
  for (const auto& [field, member] : kIntegerFields) {
    DAGRAD_RETURN_IF_ERROR(ReadInteger(j, path, field, c.*member));
  }
  DAGRAD_RETURN_IF_ERROR(ReadOptional(j, path, c));
  DAGRAD_RETURN_IF_ERROR(ReadDropouts(j, path, c));
  if (absl::Status valid = c.Validate(); !valid.ok()) {
    // "gpt2 config: ..." becomes "<path>: ...".
    return absl::InvalidArgumentError(
        absl::StrCat(path, valid.message().substr(valid.message().find(':'))));
  }
  return c;
}

std::map<std::string, std::string> Gpt2Config::ToMetadata() const {
  std::map<std::string, std::string> m = {{"model", "gpt2"},
                                          {"vocab_size", absl::StrCat(vocab)},
                                          {"n_positions", absl::StrCat(positions)},
                                          {"n_embd", absl::StrCat(dim)},
                                          {"n_head", absl::StrCat(heads)},
                                          {"n_layer", absl::StrCat(layers)},
                                          {"n_inner", absl::StrCat(inner)},
                                          {"layer_norm_epsilon", MetadataNumber(layer_norm_epsilon)},
                                          {"activation_function", activation}};
  for (const auto& [field, member] : kDropoutFields) m[field] = MetadataNumber(this->*member);
  return m;
}

absl::StatusOr<Gpt2Config> Gpt2Config::FromMetadata(const std::map<std::string, std::string>& m) {
  auto model = m.find("model");
  if (model == m.end() || model->second != "gpt2") {
    return ConfigMetadataError("model", model == m.end()
                                      ? "is missing (expected gpt2)"
                                      : absl::StrCat("is '", model->second, "', expected gpt2"));
  }
  Gpt2Config c;
  std::vector<IntegerField> fields(kIntegerFields.begin(), kIntegerFields.end());
  fields.emplace_back("n_inner", &Gpt2Config::inner);
  for (const auto& [key, member] : fields) {
    auto it = m.find(key);
    if (it == m.end()) return ConfigMetadataError(key, "is missing");
    if (!absl::SimpleAtoi(it->second, &(c.*member))) {
      return ConfigMetadataError(key, absl::StrCat("is not an integer: '", it->second, "'"));
    }
  }
  auto eps = m.find("layer_norm_epsilon");
  if (eps == m.end() || !absl::SimpleAtod(eps->second, &c.layer_norm_epsilon)) {
    return ConfigMetadataError("layer_norm_epsilon", "is missing or not a number");
  }
  auto activation = m.find("activation_function");
  if (activation == m.end()) return ConfigMetadataError("activation_function", "is missing");
  c.activation = activation->second;
  DAGRAD_RETURN_IF_ERROR(DropoutsFromMetadata(m, c));
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  return c;
}

absl::StatusOr<Gpt2Config> Gpt2Config::FromCheckpoint(const SafetensorsFile& checkpoint,
                                                      absl::string_view path) {
  return nn::ConfigFromCheckpoint<Gpt2Config, Gpt2>(checkpoint, path, "transformer.h.");
}

}  // namespace dagrad::models
