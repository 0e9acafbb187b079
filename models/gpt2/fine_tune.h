// models/gpt2/fine_tune.h
//
// CreateGpt2FineTuner: an LmTrainer (models/lm_trainer.h) that fine-tunes a
// Hugging Face GPT-2 directory (models/gpt2/hf_checkpoint.h) on a text
// file. The model is Gpt2::Builder of the directory's config, starting from
// its weights (LmTrainConfig::initial); the text is encoded with the
// directory's tokenizer (vocab.json, merges.txt; "<|endoftext|>" in the
// text is the special token) and split as TokenTextData
// (models/gpt/text_task.h) into windows of seq_len tokens. It trains with
// the config's dropouts (attn_pdrop, embd_pdrop, resid_pdrop; 0.1 each
// when config.json has none, as transformers), or all three set to
// Gpt2FineTune::dropout when given. The trainer is
// everything an LmTrainer is: models::Fit runs it with checkpoints that
// resume exactly, the stop signals and the non-finite policy. Its
// SaveModel file is a gpt2 model file (metadata model=gpt2 and the
// config) that EvaluateModel, Generator and WriteHfGpt2
// (models/gpt2/hf_export.h) take.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer,
//                           CreateGpt2FineTuner({.hf_dir = "gpt2", .text_path = "corpus.txt",
//                                                .seq_len = 32},
//                                               {.run = {.batch = 4, .steps = 20}}));
//   DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/tuned"}));
//   // then WriteHfGpt2 of runs/tuned/model.safetensors

#ifndef DAGRAD_MODELS_GPT2_FINE_TUNE_H_
#define DAGRAD_MODELS_GPT2_FINE_TUNE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "models/lm_trainer.h"
#include "models/nn/attention.h"

namespace dagrad::models {

// Gpt2FineTune: what CreateGpt2FineTuner tunes, and on what.
struct Gpt2FineTune {
  std::string hf_dir;     // the Hugging Face GPT-2 directory
  std::string text_path;  // the text to train on
  int64_t seq_len = 0;    // tokens per window, in [1, n_positions]
  // dropout: when set, the probability of all three of the model's
  // dropouts instead of config.json's.
  std::optional<double> dropout;
  // How the attention runs: the fused op or the composed subgraph (the
  // weights and the numbers are the same, to float rounding).
  nn::AttentionPath attention = nn::AttentionPath::kFused;
};

// CreateGpt2FineTuner reads `tune.hf_dir` and `tune.text_path` and returns
// the trainer of `config` (its `initial` and `initial_source` are set here;
// its metadata gain task=gpt2-text, init=hf_dir, data=text_path and
// seq_len, so a resume with other files or windows is refused, and the
// model's, with its dropouts).
//
// Errors: ReadHfGpt2's and Gpt2Tokenizer::LoadDirectory's, naming the file
// and field; InvalidArgument when the tokenizer has more tokens than the
// config's vocab_size, seq_len is not in [1, n_positions], or dropout is
// outside [0, kMaxDropout] (ValidateDropout); ReadFile's for the text;
// TokenTextData::FromTokens's (a text too short for a window in each
// split, named); LmTrainer::Create's.
absl::StatusOr<std::unique_ptr<LmTrainer>> CreateGpt2FineTuner(
    const Gpt2FineTune& tune, LmTrainConfig config, std::unique_ptr<Device> device = CpuDevice(),
    const DataParallelOptions& data_parallel = {});

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT2_FINE_TUNE_H_
