// models/gpt2/fine_tune.h
//
// CreateGpt2FineTuner: an LmTrainer (models/lm_trainer.h) that fine-tunes a
// Hugging Face GPT-2 directory (models/gpt2/hf_checkpoint.h) on a text
// file. The model is Gpt2::Builder of the directory's config, starting from
// its weights (LmTrainConfig::initial); the text is encoded with the
// directory's tokenizer (vocab.json, merges.txt; "<|endoftext|>" in the
// text is the special token) and split as TokenTextData
// (models/gpt/text_task.h) into windows of seq_len tokens. The trainer is
// everything an LmTrainer is: models::Fit runs it with checkpoints that
// resume exactly, the stop signals and the non-finite policy. Its
// SaveModel file is a gpt2 model file (metadata model=gpt2 and the
// config) that EvaluateModel, Generator and WriteHfGpt2
// (models/gpt2/hf_export.h) take.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(auto trainer, CreateGpt2FineTuner("gpt2", "corpus.txt", 32,
//                                                             {.run = {.batch = 4, .steps = 20}}));
//   DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/tuned"}));
//   // then WriteHfGpt2 of runs/tuned/model.safetensors

#ifndef DAGRAD_MODELS_GPT2_FINE_TUNE_H_
#define DAGRAD_MODELS_GPT2_FINE_TUNE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/device.h"
#include "models/lm_trainer.h"

namespace dagrad::models {

// CreateGpt2FineTuner reads `hf_dir` and `text_path` and returns the
// trainer of `config` (its `initial` and `initial_source` are set here;
// its metadata gain task=gpt2-text, init=hf_dir, data=text_path and
// seq_len, so a resume with other files or windows is refused).
//
// Errors: ReadHfGpt2's and Gpt2Tokenizer::LoadDirectory's, naming the file
// and field; InvalidArgument when the tokenizer has more tokens than the
// config's vocab_size, or seq_len is not in [1, n_positions]; ReadFile's
// for the text; TokenTextData::FromTokens's (a text too short for a window
// in each split, named); LmTrainer::Create's.
absl::StatusOr<std::unique_ptr<LmTrainer>> CreateGpt2FineTuner(
    const std::string& hf_dir, const std::string& text_path, int64_t seq_len,
    LmTrainConfig config, std::unique_ptr<Device> device = CpuDevice(),
    const DataParallelOptions& data_parallel = {});

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT2_FINE_TUNE_H_
