#include "tools/cli/eval_gpt.h"

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt.h"
#include "models/toy/tasks.h"
#include "ops/autodiff/autodiff.h"
#include "ops/loss.h"
#include "tools/cli/common_flags.h"

namespace dagrad::cli {
namespace {

// CheckIds returns InvalidArgument naming the first id outside [0, vocab)
// (and not -100 where `ignore` allows it).
absl::Status CheckIds(const Tensor& t, const std::string& name, int64_t vocab,
                      bool ignore, const std::string& path) {
  const int64_t T = t.shape()[1];
  for (int64_t i = 0, count = t.num_elements(); i < count; ++i) {
    const int64_t v = t.data<int64_t>()[i];
    if ((v < 0 || v >= vocab) && !(ignore && v == models::kIgnoreIndex)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", name, "[", i / T, ", ", i % T, "] = ", v,
                       " is outside [0, ", vocab, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInputs(const SafetensorsFile& in, const models::GptConfig& c,
                         const std::string& path) {
  for (const auto& [name, tensor] : in.tensors) {
    if (name != "tokens" && name != "targets") {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": unexpected tensor '", name, "' (expected tokens, targets)"));
    }
    if (tensor.dtype() != DType::kInt64) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": '", name, "' must be int64, got ",
                       DTypeName(tensor.dtype())));
    }
  }
  const Tensor* tokens = in.Find("tokens");
  if (tokens == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(path, ": no 'tokens'"));
  const Shape& s = tokens->shape();
  if (s.rank() != 2 || s[0] < 1 || s[1] < 1 || s[1] > c.block_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": 'tokens' must be (B, T) with B >= 1 and 1 <= T <= block_size ",
        c.block_size, ", got ", s.ToString()));
  }
  DAGRAD_RETURN_IF_ERROR(CheckIds(*tokens, "tokens", c.vocab, false, path));
  if (const Tensor* targets = in.Find("targets")) {
    if (targets->shape() != s) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": 'targets' must be ", s.ToString(), ", got ",
                       targets->shape().ToString()));
    }
    DAGRAD_RETURN_IF_ERROR(CheckIds(*targets, "targets", c.vocab, true, path));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsGptCheckpoint(const SafetensorsFile& checkpoint) {
  auto it = checkpoint.metadata.find("model");
  return it != checkpoint.metadata.end() && it->second == "gpt";
}

absl::Status EvaluateGpt(const SafetensorsFile& ckpt,
                         const std::string& checkpoint,
                         const std::string& input, const std::string& output,
                         std::unique_ptr<Device> device,
                         const ExecutorOptions& options) {
  absl::StatusOr<models::GptConfig> config =
      models::GptConfig::FromCheckpoint(ckpt, checkpoint);
  if (!config.ok()) return config.status();
  DAGRAD_ASSIGN_OR_RETURN(config->attention, AttentionFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors(input));
  DAGRAD_RETURN_IF_ERROR(CheckInputs(in, *config, input));
  const Tensor& tokens = *in.Find("tokens");
  const Tensor* targets = in.Find("targets");
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(models::Gpt model, models::Gpt::Create(g, *config));
  Value tok = g.Input("tokens", DType::kInt64, tokens.shape());
  std::vector<Value> fetches = {model(tok)};
  Value tgt;
  std::vector<Value> grads;
  if (targets) {
    tgt = g.Input("targets", DType::kInt64, targets->shape());
    Value loss = CrossEntropy(fetches[0], tgt);
    DAGRAD_ASSIGN_OR_RETURN(grads, Gradients(loss, model.parameters()));
    fetches.push_back(loss);
    fetches.insert(fetches.end(), grads.begin(), grads.end());
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  Executor exec(g, std::move(device), options);
  DAGRAD_RETURN_IF_ERROR(
      AssignVariables(exec, model.parameters(), ckpt, checkpoint));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  Feeds feeds = {{tok, tokens}};
  if (targets) feeds.push_back({tgt, *targets});
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, exec.Run(*plan, feeds));
  return WriteEvalResult(output, checkpoint, input, out, model.parameters(),
                         targets != nullptr);
}

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

}  // namespace dagrad::cli
