// `dagrad eval`: runs a trained toy model on token sequences from a
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
#include "models/toy/tasks.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/eval_gpt.h"
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

// ReadInputs checks IN's names, dtypes, shapes and values against the model.
absl::Status CheckInputs(const SafetensorsFile& in, const models::ToyConfig& c,
                         const std::string& path) {
  for (const auto& [name, tensor] : in.tensors) {
    if (name != "tokens" && name != "lengths" && name != "targets") {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": unexpected tensor '", name, "' (expected tokens, lengths, targets)"));
    }
    if (tensor.dtype() != DType::kInt64) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": '", name, "' must be int64, got ",
                                                     DTypeName(tensor.dtype())));
    }
  }
  const Tensor* tokens = in.Find("tokens");
  if (tokens == nullptr) return absl::InvalidArgumentError(absl::StrCat(path, ": no 'tokens'"));
  const Shape& s = tokens->shape();
  if (s.rank() != 2 || s[0] < 1 || s[1] < 1 || s[1] > c.seq_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": 'tokens' must be (B, T) with B >= 1 and 1 <= T <= seq_len ", c.seq_len,
        ", got ", s.ToString()));
  }
  const int64_t B = s[0], T = s[1];
  for (int64_t i = 0; i < tokens->num_elements(); ++i) {
    const int64_t v = tokens->data<int64_t>()[i];
    if (v < 0 || v >= c.vocab) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tokens[", i / T, ", ", i % T,
                                                     "] = ", v, " is outside [0, ", c.vocab, ")"));
    }
  }
  if (const Tensor* lengths = in.Find("lengths")) {
    if (lengths->shape() != Shape({B})) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": 'lengths' must be (", B,
                                                     ",), got ", lengths->shape().ToString()));
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = lengths->data<int64_t>()[b];
      if (v < 1 || v > T) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": lengths[", b, "] = ", v,
                                                       " is outside [1, ", T, "]"));
      }
    }
  }
  if (const Tensor* targets = in.Find("targets")) {
    if (targets->shape() != s) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": 'targets' must be ", s.ToString(),
                                                     ", got ", targets->shape().ToString()));
    }
    for (int64_t i = 0; i < targets->num_elements(); ++i) {
      const int64_t v = targets->data<int64_t>()[i];
      if (v != models::kIgnoreIndex && (v < 0 || v >= c.vocab)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": targets[", i / T, ", ", i % T, "] = ", v, " is outside [0, ",
                         c.vocab, ") and not -100"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Evaluate(const std::string& checkpoint, const std::string& input,
                      const std::string& output, std::unique_ptr<Device> device,
                      const ExecutorOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint(checkpoint));
  if (IsGptCheckpoint(ckpt)) {
    return EvaluateGpt(ckpt, checkpoint, input, output, std::move(device), options);
  }
  absl::StatusOr<models::ToyConfig> config = models::ToyConfig::FromCheckpoint(ckpt, checkpoint);
  if (!config.ok()) return config.status();
  DAGRAD_ASSIGN_OR_RETURN(config->attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors(input));
  DAGRAD_RETURN_IF_ERROR(CheckInputs(in, *config, input));
  const Tensor& tokens = *in.Find("tokens");
  const Tensor* lengths = in.Find("lengths");
  const Tensor* targets = in.Find("targets");

  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(models::ToyTransformer model, models::ToyTransformer::Create(g, *config));
  Value tok = g.Input("tokens", DType::kInt64, tokens.shape());
  Value len = lengths ? g.Input("lengths", DType::kInt64, lengths->shape()) : Value();
  Value logits = model(tok, len).logits;
  std::vector<Value> fetches = {logits};
  Value tgt, loss;
  std::vector<Value> grads;
  if (targets) {
    tgt = g.Input("targets", DType::kInt64, targets->shape());
    loss = CrossEntropy(logits, tgt);
    DAGRAD_ASSIGN_OR_RETURN(grads, Gradients(loss, model.parameters()));
    fetches.push_back(loss);
    fetches.insert(fetches.end(), grads.begin(), grads.end());
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  Executor exec(g, std::move(device), options);
  DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, model.parameters(), ckpt, checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  Feeds feeds = {{tok, tokens}};
  if (lengths) feeds.push_back({len, *lengths});
  if (targets) feeds.push_back({tgt, *targets});
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, exec.Run(*plan, feeds));

  return WriteEvalResult(output, checkpoint, input, out, model.parameters(),
                         targets != nullptr);
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
