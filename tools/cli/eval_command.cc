// `dagrad eval`: runs a trained model (any models::LanguageModel a checkpoint
// names: the toy transformer, the GPT) on token sequences from a
// safetensors file, in eval mode, and writes logits (and, given targets,
// the loss and every parameter's gradient) to another safetensors file.
// With --model=file.onnx it runs an ONNX model instead (onnx_model.h).

#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/language_model.h"
#include "models/toy/tasks.h"
#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/onnx_model.h"

ABSL_DECLARE_FLAG(std::string, model);  // dot_command.cc

ABSL_FLAG(std::string, checkpoint, "", "model.safetensors written by dagrad train (or PyTorch)");
ABSL_FLAG(std::string, input, "", "safetensors with tokens (int64 (B, T)), optional lengths "
                                  "(int64 (B)) and targets (int64 (B, T), -100 = ignore); with "
                                  "--model=F.onnx, each graph input by its ONNX name");
ABSL_FLAG(std::string, output, "", "safetensors to write: logits, and with targets loss and "
                                   "grad.<parameter>; with --model=F.onnx, each graph output by "
                                   "its ONNX name");

namespace dagrad::cli {
namespace {

// CheckIds checks that each value of int64 `t` (B, T) is a token of
// `vocab`, or -100 (ignored) when `ignore`.
absl::Status CheckIds(const Tensor& t, const std::string& name, int64_t vocab, bool ignore,
                      const std::string& path) {
  const int64_t T = t.shape()[1];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const int64_t v = t.data<int64_t>()[i];
    if ((v < 0 || v >= vocab) && !(ignore && v == models::kIgnoreIndex)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", name, "[", i / T, ", ", i % T,
                                                     "] = ", v, " is outside [0, ", vocab, ")",
                                                     ignore ? " and not -100" : ""));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLengths(const Tensor& lengths, int64_t B, int64_t T, const std::string& path) {
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

// CheckInputs checks IN's names, dtypes, shapes and values against the model.
absl::Status CheckInputs(const SafetensorsFile& in, const models::LanguageModel& m,
                         const std::string& path) {
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

// WriteEvalResult writes `output`: the metadata name the checkpoint and
// input, then logits = out[0] and, with targets, loss = out[1] and
// grad.<checkpoint name> = out[2 + i] for each of `params`.
absl::Status WriteEvalResult(const std::string& output, const std::string& checkpoint,
                             const std::string& input, const std::vector<Tensor>& out,
                             const std::vector<Value>& params, bool with_targets) {
  SafetensorsFile result;
  result.metadata = {{"checkpoint", checkpoint}, {"input", input}};
  result.tensors.push_back({"logits", out[0]});
  if (with_targets) {
    result.tensors.push_back({"loss", out[1]});
    for (size_t i = 0; i < params.size(); ++i) {
      result.tensors.push_back(
          {absl::StrCat("grad.", CheckpointName(params[i].node())), out[2 + i]});
    }
  }
  return WriteSafetensors(output, result);
}

// Evaluate runs the model of `checkpoint`, whatever it is, on `input`.
absl::Status Evaluate(const std::string& checkpoint, const std::string& input,
                      const std::string& output, std::unique_ptr<Device> device,
                      const ExecutorOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint(checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(const nn::AttentionPath attention, AttentionFromFlags());
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<models::LanguageModel> model,
                          models::LoadLanguageModel(g, ckpt, checkpoint, {.attention = attention}));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors(input));
  DAGRAD_RETURN_IF_ERROR(CheckInputs(in, *model, input));
  Feeds feeds;
  auto feed = [&](const std::string& name) {
    const Tensor* t = in.Find(name);
    if (t == nullptr) return Value();
    feeds.push_back({g.Input(name, DType::kInt64, t->shape()), *t});
    return feeds.back().first;
  };
  const Value tokens = feed("tokens"), lengths = feed("lengths"), targets = feed("targets");
  std::vector<Value> fetches = {model->Logits(tokens, lengths)};
  if (!targets.is_null()) {
    const Value loss = CrossEntropy(fetches[0], targets);
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, model->parameters()));
    fetches.push_back(loss);
    fetches.insert(fetches.end(), grads.begin(), grads.end());
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  Executor exec(g, std::move(device), options);
  DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, model->parameters(), ckpt, checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, exec.Run(*plan, feeds));
  return WriteEvalResult(output, checkpoint, input, out, model->parameters(), !targets.is_null());
}

// OnnxModelFlag returns --model when it names an ONNX file, "" when it is
// not given, and an error for anything else.
absl::StatusOr<std::string> OnnxModelFlag() {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (IsOnnxPath(model)) return model;
  if (model == absl::GetFlagReflectionHandle(FLAGS_model).DefaultValue()) return std::string();
  return absl::InvalidArgumentError(
      absl::StrCat("eval's --model takes an .onnx file, got '", model, "'"));
}

int RunEval() {
  const Command cmd = EvalCommand();
  if (absl::Status st = ApplyThreadsFlag(); !st.ok()) return UsageError(cmd, std::string(st.message()));
  absl::StatusOr<std::string> onnx = OnnxModelFlag();
  if (!onnx.ok()) return UsageError(cmd, std::string(onnx.status().message()));
  for (const auto& [flag, value] :
       {std::pair{"checkpoint", onnx->empty() ? absl::GetFlag(FLAGS_checkpoint) : *onnx},
        std::pair{"input", absl::GetFlag(FLAGS_input)},
        std::pair{"output", absl::GetFlag(FLAGS_output)}}) {
    if (value.empty()) return UsageError(cmd, absl::StrCat("--", flag, " is required"));
  }
  absl::StatusOr<ExecutorOptions> options = ExecutorOptionsFromFlags();
  if (!options.ok()) return UsageError(cmd, std::string(options.status().message()));
  if (absl::Status st = AttentionFromFlags().status(); !st.ok()) {
    return UsageError(cmd, std::string(st.message()));
  }
  absl::StatusOr<std::unique_ptr<Device>> device = DeviceFromFlags();
  if (!device.ok()) return Failure(cmd, device.status());
  absl::Status st =
      onnx->empty()
          ? Evaluate(absl::GetFlag(FLAGS_checkpoint), absl::GetFlag(FLAGS_input),
                     absl::GetFlag(FLAGS_output), *std::move(device), *options)
          : EvaluateOnnx(*onnx, absl::GetFlag(FLAGS_input), absl::GetFlag(FLAGS_output),
                         *std::move(device), *options);
  if (!st.ok()) return Failure(cmd, st);
  std::cout << "wrote " << absl::GetFlag(FLAGS_output) << "\n";
  return kExitOk;
}

}  // namespace

Command EvalCommand() {
  return {"eval",
          "run a trained model (or --model=file.onnx) on inputs from a safetensors file "
          "(eval mode)",
          {"checkpoint", "model", "input", "output", "threads", "wait_policy", "check_numerics", "memory_limit_mb",
           "device", "tf32", "attention"},
          RunEval};
}

}  // namespace dagrad::cli
