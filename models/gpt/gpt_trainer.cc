#include "models/gpt/gpt_trainer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/plot/plots.h"
#include "ops/loss.h"
#include "ops/shape_ops.h"

namespace dagrad::models {
namespace {

constexpr char kGptStateFormat[] = "gpt-text-train-state/1";

}  // namespace

absl::Status StartFromModelFile(TextTrainConfig& config, const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadModelFile(path));
  DAGRAD_ASSIGN_OR_RETURN(GptConfig model, GptConfig::FromCheckpoint(file, path));
  if (model.vocab != 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": its GPT's vocab is ", model.vocab, "; a text run's tokens are the 256 bytes"));
  }
  model.dropout = config.model.dropout;
  model.attention = config.model.attention;
  config.model = model;
  config.initial = std::make_shared<const SafetensorsFile>(std::move(file));
  config.initial_source = path;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GptTrainer>> GptTrainer::Create(
    const TextTrainConfig& config, std::unique_ptr<Device> device,
    const DataParallelOptions& data_parallel) {
  DAGRAD_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<GptTrainer> t(new GptTrainer());
  t->text_config_ = config;
  DAGRAD_ASSIGN_OR_RETURN(TextData text, TextData::Load(config.data, config.model.block_size));
  if (Communicator* comm = data_parallel.communicator.get()) {
    DAGRAD_RETURN_IF_ERROR(text.SameOnEveryRank(*comm, config.data));
  }
  t->text_ = std::make_unique<TextData>(std::move(text));
  LmData lm = TextData::ToLmData(static_cast<const TextData*>(t->text_.get()), config.run.seed);
  DAGRAD_RETURN_IF_ERROR(t->Init(Gpt::Builder(config.model), std::move(lm),
                                 {.run = config.run,
                                  .eval_windows = config.eval_windows,
                                  .format = kGptStateFormat,
                                  .metadata = {{"task", "text"},
                                               {"data", config.data},
                                               {kDataChecksumKey, t->text_->Checksum()}},
                                  .initial = config.initial,
                                  .initial_source = config.initial_source},
                                 std::move(device), data_parallel));
  return t;
}

absl::Status GptTrainer::BuildMore() {
  Graph::Scope scope(*graph_, "eval");
  window_tokens_ = graph_->Input("window", DType::kInt64, {1, text_config_.model.block_size});
  attention_ = gpt().Forward(window_tokens_, {.keep_attention = true}).attention;
  return absl::OkStatus();
}

absl::Status GptTrainer::CompileMore() {
  DAGRAD_ASSIGN_OR_RETURN(attention_plan_, exec_->Compile(attention_));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> GptTrainer::Attention(std::string* window) {
  const int64_t T = text_config_.model.block_size;
  DAGRAD_ASSIGN_OR_RETURN(const TokenBatch first, text_->Validation(0, 1));
  *window = TokensToBytes(absl::MakeConstSpan(first.tokens.data<int64_t>(), T));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*attention_plan_, {{window_tokens_, first.tokens}}));
  for (Tensor& w : out) {  // (1, H, T, T) -> (H, T, T)
    DAGRAD_ASSIGN_OR_RETURN(w, w.Reshaped({text_config_.model.heads, T, T}));
  }
  return out;
}

absl::StatusOr<std::string> GptTrainer::Sample(
    const std::string& prompt, int64_t tokens,
    const SamplingOptions& sampling) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile weights,
                          CollectVariables(*exec_, model().parameters()));
  DAGRAD_ASSIGN_OR_RETURN(auto gen, Generator::Create(Gpt::Builder(text_config_.model), weights));
  DAGRAD_ASSIGN_OR_RETURN(
      std::vector<int64_t> more,
      gen->Generate(BytesToTokens(prompt),
                    {.tokens = tokens, .sampling = sampling}));
  return prompt + TokensToBytes(more);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GptTrainer::Pictures() {
  std::string window;
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> weights, Attention(&window));
  std::vector<std::string> labels;
  for (char ch : window) {
    labels.push_back(ch >= 32 && ch < 127 ? std::string(1, ch)
                                          : absl::StrFormat("%02x", ch & 0xff));
  }
  std::vector<std::pair<std::string, std::string>> pictures;
  DAGRAD_ASSIGN_OR_RETURN(std::string heads,
                          plot::AttentionHeatmaps(weights, labels,
                                                  "causal attention on the first validation "
                                                  "window (row: query, column: key)"));
  pictures.emplace_back("attention.svg", std::move(heads));
  return pictures;
}

absl::StatusOr<std::string> GptTrainer::Summary(const EvalResult& final_eval) {
  const std::string& text = data().validation();
  const std::string prompt = text.substr(0, std::min<size_t>(16, text.size()));
  DAGRAD_ASSIGN_OR_RETURN(const std::string sample,
                          Sample(prompt, 200, {.temperature = 0.8, .seed = config().run.seed}));
  return absl::StrCat(ValidationSummary(final_eval, "byte"), "sample:\n", TerminalText(sample), "\n");
}

}  // namespace dagrad::models
