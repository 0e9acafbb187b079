// `dagrad export`: writes a trained model (any models::LanguageModel a
// checkpoint names: the toy transformer, the GPT) as an ONNX model for
// inference (ops/onnx/export.h), its input `tokens` int64 (batch, sequence)
// and, for a model that reads them (the toy transformer), `lengths` int64
// (batch) as `dagrad eval`'s input file names them, its output `logits`
// (batch, sequence, vocab). Batch and sequence are symbolic, declared as a
// ShapeFamily declares them and proven by building the model at two sizes
// (ops/onnx/export_family.h). With
// --format=hf it writes a GPT-2 (`dagrad train --init=DIR`'s model) as a
// Hugging Face directory in transformers' own files (models/gpt2/hf_export.h).

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/gpt2/hf_config.h"
#include "models/gpt2/hf_export.h"
#include "models/language_model.h"
#include "models/text_codec.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/onnx_model.h"
#ifdef DAGRAD_HAVE_ONNX
#include "ops/onnx/export_family.h"
#endif

ABSL_DECLARE_FLAG(std::string, checkpoint);  // eval_command.cc
ABSL_FLAG(std::string, format, "onnx",
          "onnx: an ONNX model for inference; hf: a fine-tuned GPT-2 as a Hugging Face "
          "directory (config.json, model.safetensors, the tokenizer's vocab.json and merges.txt)");
ABSL_FLAG(std::string, tokenizer, "",
          "the directory of the GPT-2 tokenizer (vocab.json, merges.txt) whose ids --checkpoint "
          "reads; empty: the one the checkpoint records (a fine-tuned GPT-2's --init)");

namespace dagrad::cli {
namespace {

#ifdef DAGRAD_HAVE_ONNX

absl::Status Export(const std::string& checkpoint, const std::string& out) {
  DAGRAD_RETURN_IF_ERROR(RefuseOverwrite(out, "out", {{checkpoint, "checkpoint"}}));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, models::ReadModelFile(checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(const nn::AttentionPath attention, AttentionFromFlags());
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<models::LanguageModel> model,
                          models::LoadLanguageModel(g, ckpt, checkpoint, {.attention = attention}));
  // Symbolic batch and sequence, as a ShapeFamily declares them.
  ShapeFamilyOptions family{.inputs = {{"tokens", DType::kInt64, {"batch", "sequence"}}},
                            .bounds = {{"batch", 1 << 20}, {"sequence", model->max_len()}}};
  if (model->takes_lengths()) family.inputs.push_back({"lengths", DType::kInt64, {"batch"}});
  auto logits = [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
    return Specialized{.fetches = {model->Logits(b.input("tokens"), b.input("lengths"))}};
  };
  return ExportOnnxFamily(g, family, logits, out,
                          {.variables = &ckpt, .output_names = {"logits"}});
}

#else

absl::Status Export(const std::string&, const std::string& out) { return NoOnnx(out); }

#endif  // DAGRAD_HAVE_ONNX

// TokenizerDir is --tokenizer, or else the one `model_path` records.
absl::StatusOr<std::string> TokenizerDir(const std::string& model_path) {
  if (!absl::GetFlag(FLAGS_tokenizer).empty()) return absl::GetFlag(FLAGS_tokenizer);
  absl::StatusOr<std::string> recorded = models::RecordedTokenizerDir(model_path);
  if (absl::IsNotFound(recorded.status())) {
    return absl::InvalidArgumentError(absl::StrCat("--format=hf needs --tokenizer=DIR (vocab.json, "
                                                   "merges.txt): ", recorded.status().message()));
  }
  return recorded;
}

absl::Status ExportHf(const std::string& checkpoint, const std::string& out) {
  if (IsDirectory(checkpoint)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format=hf writes a dagrad checkpoint as a Hugging Face directory, and ", checkpoint,
        " is a directory: give its model.safetensors"));
  }
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile model, models::ReadModelFile(checkpoint));
  // A model that is no GPT-2 is named before the tokenizer it would need.
  if (absl::Status gpt2 = models::Gpt2Config::FromMetadata(model.metadata).status(); !gpt2.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--format=hf writes a GPT-2, and ", checkpoint,
                                                   " is none: ", gpt2.message()));
  }
  DAGRAD_ASSIGN_OR_RETURN(const std::string tokenizer, TokenizerDir(checkpoint));
  return models::WriteHfGpt2(model, checkpoint, tokenizer, out);
}

absl::Status ExportModel() {
  DAGRAD_RETURN_IF_ERROR(RequireFlags({"checkpoint", "out"}));
  DAGRAD_RETURN_IF_ERROR(AttentionFromFlags().status());
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "onnx" && format != "hf") {
    return absl::InvalidArgumentError(absl::StrCat("--format must be onnx or hf, got '", format, "'"));
  }
  // A flag the format would ignore is refused.
  DAGRAD_RETURN_IF_ERROR(format == "hf"
                             ? RefuseFlagsNotFor({"attention"}, "--format=onnx",
                                                 "a Hugging Face directory holds the weights, not how "
                                                 "attention runs")
                             : RefuseFlagsNotFor({"tokenizer"}, "--format=hf",
                                                 "an ONNX model reads token ids, not text"));
  DAGRAD_RETURN_IF_ERROR(
      (format == "hf" ? ExportHf : Export)(absl::GetFlag(FLAGS_checkpoint), absl::GetFlag(FLAGS_out)));
  std::cout << "wrote " << absl::GetFlag(FLAGS_out) << "\n";
  return absl::OkStatus();
}

int RunExport() { return ExitCode(ExportCommand(), ExportModel()); }

}  // namespace

Command ExportCommand() {
  return {"export",
          "write a trained model as an ONNX model for inference (opset 17), or a fine-tuned "
          "GPT-2 as a Hugging Face directory (--format=hf)",
          {"checkpoint", "out", "format", "tokenizer", "attention"},
          RunExport};
}

}  // namespace dagrad::cli
