// `dagrad eval`: runs a trained model (any models::LanguageModel a checkpoint
// names: the toy transformer, the GPT) on token sequences from a
// safetensors file, in eval mode, and writes logits (and, given targets,
// the loss and every parameter's gradient) to another safetensors file.
// --model=DIR runs a Hugging Face GPT-2 directory (models/gpt2/) the same
// way; --model=file.onnx runs an ONNX model (ops/onnx/run.h).

#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "models/evaluate.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/onnx_model.h"

ABSL_FLAG(std::string, checkpoint, "",
          "model.safetensors written by dagrad train (or PyTorch), or its "
          "checkpoint.safetensors (its parameters: a run stopped before its end)");
ABSL_FLAG(std::string, input, "", "safetensors with tokens (int64 (B, T)), optional lengths "
                                  "(int64 (B)) and targets (int64 (B, T), -100 = ignore); with "
                                  "--model=F.onnx, each graph input by its ONNX name");
ABSL_FLAG(std::string, output, "", "safetensors to write: logits, and with targets loss and "
                                   "grad.<parameter>; with --model=F.onnx, each graph output by "
                                   "its ONNX name");

namespace dagrad::cli {
namespace {

absl::Status Eval() {
  DAGRAD_RETURN_IF_ERROR(ApplyThreadsFlag());
  DAGRAD_ASSIGN_OR_RETURN(const std::string path, ModelPathFromFlags(EvalCommand(), /*onnx=*/true));
  DAGRAD_RETURN_IF_ERROR(RequireFlags({"input", "output"}));
  DAGRAD_ASSIGN_OR_RETURN(const ExecutorOptions options, ExecutorOptionsFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(const nn::AttentionPath attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(const Precision precision, PrecisionFromFlags());
  if (IsOnnxPath(path) && precision == Precision::kBFloat16) {
    return absl::InvalidArgumentError(
        "--precision=bf16 applies to a checkpoint or a Hugging Face directory, not an ONNX model");
  }
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                          DeviceFromFlags(/*tf32=*/precision == Precision::kTF32));
  const std::string input = absl::GetFlag(FLAGS_input), output = absl::GetFlag(FLAGS_output);
  const char* model_flag = absl::GetFlag(FLAGS_checkpoint).empty() ? "model" : "checkpoint";
  DAGRAD_RETURN_IF_ERROR(RefuseOverwrite(output, "output", {{input, "input"}, {path, model_flag}}));
  DAGRAD_RETURN_IF_ERROR(
      IsOnnxPath(path) ? EvaluateOnnx(path, input, output, std::move(device), options)
                       : models::EvaluateModelFiles(path, input, output, std::move(device), options,
                                                    {.attention = attention}, precision));
  std::cout << "wrote " << output << "\n";
  return absl::OkStatus();
}

int RunEval() { return ExitCode(EvalCommand(), Eval()); }

}  // namespace

Command EvalCommand() {
  return {"eval",
          "run a trained model (--checkpoint, or --model: an ONNX file or a Hugging Face GPT-2 "
          "directory) on inputs from a safetensors file (eval mode)",
          {"checkpoint", "model", "input", "output", "threads", "wait_policy", "check_numerics", "memory_limit_mb",
           "device", "tf32", "precision", "attention"},
          RunEval};
}

}  // namespace dagrad::cli
