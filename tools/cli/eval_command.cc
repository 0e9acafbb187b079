// `dagrad eval`: runs a trained model (any models::LanguageModel a checkpoint
// names: the toy transformer, the GPT) on token sequences from a
// safetensors file, in eval mode, and writes logits (and, given targets,
// the loss and every parameter's gradient) to another safetensors file.
// With --model=file.onnx it runs an ONNX model instead (ops/onnx/run.h).

#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/evaluate.h"
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

// Evaluate runs the model of `checkpoint`, whatever it is, on `input`
// (models::EvaluateModel) and writes `output`.
absl::Status Evaluate(const std::string& checkpoint, const std::string& input,
                      const std::string& output, std::unique_ptr<Device> device,
                      const ExecutorOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint(checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(const nn::AttentionPath attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors(input));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile result,
                          models::EvaluateModel(ckpt, checkpoint, in, input, std::move(device),
                                                options, {.attention = attention}));
  return WriteSafetensors(output, result);
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
