// models/evaluate.h
//
// EvaluateModel: a trained model (any a checkpoint names: LoadLanguageModel)
// run in eval mode on token sequences — what `dagrad eval` writes, and what
// the PyTorch references compare against: logits and, given targets, the
// loss and every parameter's gradient.
//
//   // setup: SavedGpt
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint("run/model.safetensors"));
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors("input.safetensors"));
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile out,
//       EvaluateModel(ckpt, "run/model.safetensors", in, "input.safetensors"));
//   const Tensor* logits = out.Find("logits");            // (B, T, vocab)

#ifndef DAGRAD_MODELS_EVALUATE_H_
#define DAGRAD_MODELS_EVALUATE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/io/safetensors.h"
#include "models/language_model.h"
#include "ops/autodiff/precision.h"

namespace dagrad::models {

// CheckModelInputs checks the tensors of `inputs` (named `path` in
// messages) against `model`: int64 tokens (B, T) with 1 <= T <= max_len()
// and every token in [0, vocab()); optional lengths (B) in [1, T], for a
// model that reads them; optional targets shaped as tokens, -100 ignored;
// nothing else. InvalidArgument naming the tensor, the element and the
// bound.
absl::Status CheckModelInputs(const SafetensorsFile& inputs, const LanguageModel& model,
                              absl::string_view path);

// EvaluateModel builds the model of `checkpoint` (LoadLanguageModel, with
// `model_options`), loads its weights and runs it in eval mode on `inputs`
// (CheckModelInputs): logits, and with targets the loss (mean cross-entropy
// over the targets not ignored) and grad.<parameter> for every parameter;
// the metadata name the checkpoint, the inputs and the precision. Under
// Precision::kBFloat16 the logits and the loss are ApplyPrecision's
// (ops/autodiff/precision.h), as a run trained with it evaluates them, and
// the gradients are those of that loss. The errors of each step.
absl::StatusOr<SafetensorsFile> EvaluateModel(const SafetensorsFile& checkpoint,
                                              absl::string_view checkpoint_path,
                                              const SafetensorsFile& inputs,
                                              absl::string_view inputs_path,
                                              std::unique_ptr<Device> device = CpuDevice(),
                                              const ExecutorOptions& options = {},
                                              const LanguageModelOptions& model_options = {},
                                              Precision precision = Precision::kFloat32);

// EvaluateModelFiles is EvaluateModel of the model at `model_path`
// (ReadModelFile: a checkpoint or a Hugging Face GPT-2 directory) on the
// inputs in `input_path`, its result written to `output_path` (what `dagrad
// eval` does; ops/onnx/run.h's EvaluateOnnxFiles is its twin for ONNX).
// The errors of reading, evaluating and writing, each naming its file.
//
//   // setup: SavedGpt
//   DAGRAD_RETURN_IF_ERROR(
//       EvaluateModelFiles("run/model.safetensors", "input.safetensors", "out.safetensors"));
absl::Status EvaluateModelFiles(const std::string& model_path, const std::string& input_path,
                                const std::string& output_path,
                                std::unique_ptr<Device> device = CpuDevice(),
                                const ExecutorOptions& options = {},
                                const LanguageModelOptions& model_options = {},
                                Precision precision = Precision::kFloat32);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_EVALUATE_H_
