// `dagrad export`: writes a trained model (toy transformer or GPT
// checkpoint) as an ONNX model for inference (ops/onnx/export.h), its
// input `tokens` int64 (batch, sequence) and, for the toy model, `lengths`
// int64 (batch) as `dagrad eval`'s input file names them, its output
// `logits` (batch, sequence, vocab). Batch and sequence are symbolic.

#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt.h"
#include "models/toy/transformer.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/eval_gpt.h"
#ifdef DAGRAD_HAVE_ONNX
#include "ops/onnx/export.h"
#endif

ABSL_DECLARE_FLAG(std::string, checkpoint);  // eval_command.cc

namespace dagrad::cli {
namespace {

#ifdef DAGRAD_HAVE_ONNX

// ExportSizes picks the batch and sequence sizes to build the graph at:
// distinct, >= 2, the sequence <= max_sequence, and neither a dim of a
// parameter nor one of `model_sizes` (heads, head size, the 2 of pairs and
// the 3 of q, k, v, ...), since the export takes every size equal to one
// of them for that symbol.
absl::StatusOr<std::pair<int64_t, int64_t>> ExportSizes(const std::vector<Value>& parameters,
                                                        std::vector<int64_t> model_sizes,
                                                        int64_t max_sequence) {
  std::set<int64_t> taken(model_sizes.begin(), model_sizes.end());
  for (const Value& p : parameters) {
    for (int64_t d : p.shape().dims()) taken.insert(d);
  }
  auto next_free = [&](int64_t from) {
    while (taken.count(from) > 0) ++from;
    return from;
  };
  const int64_t sequence = next_free(2);
  taken.insert(sequence);
  const int64_t batch = next_free(2);
  if (sequence > max_sequence) {
    return absl::InvalidArgumentError(absl::StrCat(
        "every sequence length up to the model's ", max_sequence,
        " is also one of its dims, so the sequence axis cannot be told apart in the graph"));
  }
  return std::pair{batch, sequence};
}

// ToyGraph builds the toy transformer's logits for tokens (B, T), lengths (B).
absl::StatusOr<Value> ToyGraph(Graph& g, const SafetensorsFile& ckpt, const std::string& path) {
  absl::StatusOr<models::ToyConfig> c = models::ToyConfig::FromCheckpoint(ckpt, path);
  if (!c.ok()) return c.status();
  DAGRAD_ASSIGN_OR_RETURN(c->attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(models::ToyTransformer model, models::ToyTransformer::Create(g, *c));
  const int64_t head = c->dim / c->heads;
  DAGRAD_ASSIGN_OR_RETURN(
      auto sizes, ExportSizes(model.parameters(), {2, 3, c->heads, head, head / 2, c->dim / 2},
                              c->seq_len));
  Value tokens = g.Input("tokens", DType::kInt64, {sizes.first, sizes.second});
  Value lengths = g.Input("lengths", DType::kInt64, {sizes.first});
  return model(tokens, lengths).logits;
}

// GptGraph builds the GPT's logits for tokens (B, T).
absl::StatusOr<Value> GptGraph(Graph& g, const SafetensorsFile& ckpt, const std::string& path) {
  absl::StatusOr<models::GptConfig> c = models::GptConfig::FromCheckpoint(ckpt, path);
  if (!c.ok()) return c.status();
  DAGRAD_ASSIGN_OR_RETURN(c->attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(models::Gpt model, models::Gpt::Create(g, *c));
  const int64_t head = c->dim / c->heads;
  DAGRAD_ASSIGN_OR_RETURN(
      auto sizes,
      ExportSizes(model.parameters(), {2, 3, c->heads, head}, c->block_size));
  return model(g.Input("tokens", DType::kInt64, {sizes.first, sizes.second}));
}

absl::Status Export(const std::string& checkpoint, const std::string& out) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile ckpt, ReadCheckpoint(checkpoint));
  Graph g;
  const bool gpt = IsGptCheckpoint(ckpt);
  DAGRAD_ASSIGN_OR_RETURN(Value logits,
                          gpt ? GptGraph(g, ckpt, checkpoint) : ToyGraph(g, ckpt, checkpoint));
  DAGRAD_RETURN_IF_ERROR(g.status());
  OnnxExportOptions options;
  options.variables = &ckpt;
  options.output_names = {"logits"};
  options.dynamic_dims = {{"tokens", 0, "batch"}, {"tokens", 1, "sequence"}};
  if (!gpt) options.dynamic_dims.push_back({"lengths", 0, "batch"});
  return ExportOnnx(g, {logits}, out, options);
}

#else

absl::Status Export(const std::string&, const std::string&) {
  return absl::FailedPreconditionError(
      "dagrad was built without ONNX (DAGRAD_ONNX=OFF, or libonnx-dev and libprotobuf-dev "
      "were not found: bash tools/setup.sh installs them)");
}

#endif  // DAGRAD_HAVE_ONNX

int RunExport() {
  const Command cmd = ExportCommand();
  for (const auto& [flag, value] : {std::pair{"checkpoint", absl::GetFlag(FLAGS_checkpoint)},
                                    std::pair{"out", absl::GetFlag(FLAGS_out)}}) {
    if (value.empty()) return UsageError(cmd, absl::StrCat("--", flag, " is required"));
  }
  if (absl::Status st = AttentionFromFlags().status(); !st.ok()) {
    return UsageError(cmd, std::string(st.message()));
  }
  if (absl::Status st = Export(absl::GetFlag(FLAGS_checkpoint), absl::GetFlag(FLAGS_out));
      !st.ok()) {
    return Failure(cmd, st);
  }
  std::cout << "wrote " << absl::GetFlag(FLAGS_out) << "\n";
  return kExitOk;
}

}  // namespace

Command ExportCommand() {
  return {"export",
          "write a trained model as an ONNX model for inference (opset 17)",
          {"checkpoint", "out", "attention"},
          RunExport};
}

}  // namespace dagrad::cli
