#include "models/evaluate.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/toy/tasks.h"
#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"

namespace dagrad::models {
namespace {

// CheckIds checks that each value of int64 `t` (B, T) is a token of
// `vocab`, or -100 (ignored) when `ignore`.
absl::Status CheckIds(const Tensor& t, const std::string& name, int64_t vocab, bool ignore,
                      absl::string_view path) {
  const int64_t T = t.shape()[1];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const int64_t v = t.data<int64_t>()[i];
    if ((v < 0 || v >= vocab) && !(ignore && v == kIgnoreIndex)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", name, "[", i / T, ", ", i % T,
                                                     "] = ", v, " is outside [0, ", vocab, ")",
                                                     ignore ? " and not -100" : ""));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLengths(const Tensor& lengths, int64_t B, int64_t T, absl::string_view path) {
  if (lengths.shape() != Shape({B})) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": 'lengths' must be (", B, ",), got ",
                                                   lengths.shape().ToString()));
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t v = lengths.data<int64_t>()[b];
    if (v < 1 || v > T) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": lengths[", b, "] = ", v, " is outside [1, ", T, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckModelInputs(const SafetensorsFile& in, const LanguageModel& m,
                              absl::string_view path) {
  const std::string expected = m.takes_lengths() ? "tokens, lengths, targets" : "tokens, targets";
  for (const auto& [name, tensor] : in.tensors) {
    if (name != "tokens" && name != "targets" && !(name == "lengths" && m.takes_lengths())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unexpected tensor '", name, "' (expected ", expected, ")"));
    }
    if (tensor.dtype() != DType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": '", name, "' must be int64, got ",
                                                     DTypeName(tensor.dtype())));
    }
  }
  const Tensor* tokens = in.Find("tokens");
  if (tokens == nullptr) return absl::InvalidArgumentError(absl::StrCat(path, ": no 'tokens'"));
  const Shape& s = tokens->shape();
  if (s.rank() != 2 || s[0] < 1 || s[1] < 1 || s[1] > m.max_len()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": 'tokens' must be (B, T) with B >= 1 and 1 <= T <= ", m.max_len_name(), " ",
        m.max_len(), ", got ", s.ToString()));
  }
  DAGRAD_RETURN_IF_ERROR(CheckIds(*tokens, "tokens", m.vocab(), false, path));
  if (const Tensor* lengths = in.Find("lengths")) {
    DAGRAD_RETURN_IF_ERROR(CheckLengths(*lengths, s[0], s[1], path));
  }
  if (const Tensor* targets = in.Find("targets")) {
    if (targets->shape() != s) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": 'targets' must be ", s.ToString(),
                                                     ", got ", targets->shape().ToString()));
    }
    DAGRAD_RETURN_IF_ERROR(CheckIds(*targets, "targets", m.vocab(), true, path));
  }
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsFile> EvaluateModel(const SafetensorsFile& checkpoint,
                                              absl::string_view checkpoint_path,
                                              const SafetensorsFile& inputs,
                                              absl::string_view inputs_path,
                                              std::unique_ptr<Device> device,
                                              const ExecutorOptions& options,
                                              const LanguageModelOptions& model_options,
                                              Precision precision) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<LanguageModel> model,
                          LoadLanguageModel(g, checkpoint, checkpoint_path, model_options));
  DAGRAD_RETURN_IF_ERROR(CheckModelInputs(inputs, *model, inputs_path));
  Feeds feeds;
  auto feed = [&](const std::string& name) {
    const Tensor* t = inputs.Find(name);
    if (t == nullptr) return Value();
    feeds.push_back({g.Input(name, DType::kInt64, t->shape()), *t});
    return feeds.back().first;
  };
  const Value tokens = feed("tokens"), lengths = feed("lengths"), targets = feed("targets");
  std::vector<Value> fetches = {model->Logits(tokens, lengths)};
  if (!targets.is_null()) fetches.push_back(CrossEntropy(fetches[0], targets));
  DAGRAD_ASSIGN_OR_RETURN(fetches, ApplyPrecision(fetches, precision));
  if (!targets.is_null()) {
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(fetches[1], model->parameters()));
    fetches.insert(fetches.end(), grads.begin(), grads.end());
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  Executor exec(g, std::move(device), options);
  DAGRAD_RETURN_IF_ERROR(
      AssignVariables(exec, model->parameters(), checkpoint, std::string(checkpoint_path)));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, exec.Run(*plan, feeds));
  SafetensorsFile result;
  // The paths as text (JSON holds UTF-8 only): a name of other bytes has
  // them written \xNN.
  result.metadata = {{"checkpoint", PrintableText(checkpoint_path)},
                     {"input", PrintableText(inputs_path)},
                     {"precision", PrecisionName(precision)}};
  result.tensors.push_back({"logits", out[0]});
  if (!targets.is_null()) {
    result.tensors.push_back({"loss", out[1]});
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      result.tensors.push_back(
          {absl::StrCat("grad.", CheckpointName(model->parameters()[i].node())), out[2 + i]});
    }
  }
  return result;
}

absl::Status EvaluateModelFiles(const std::string& model_path, const std::string& input_path,
                                const std::string& output_path, std::unique_ptr<Device> device,
                                const ExecutorOptions& options,
                                const LanguageModelOptions& model_options,
                                Precision precision) {
  DAGRAD_ASSIGN_OR_RETURN(const SafetensorsFile model, ReadModelFile(model_path));
  DAGRAD_ASSIGN_OR_RETURN(const SafetensorsFile in, ReadSafetensors(input_path));
  DAGRAD_ASSIGN_OR_RETURN(const SafetensorsFile result,
                          EvaluateModel(model, model_path, in, input_path, std::move(device),
                                        options, model_options, precision));
  return WriteSafetensors(output_path, result);
}

}  // namespace dagrad::models
