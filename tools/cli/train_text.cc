// `dagrad train --task=text --data=FILE`: trains models::Gpt byte-level on a
// text file (models/gpt/gpt_trainer.h) in the loop every task shares
// (RunTraining: stop signals, --resume, --on_nonfinite, the previous
// checkpoint kept) and writes to --out: checkpoint.safetensors (every
// --eval_every steps), metrics.csv (validation loss in eval_loss),
// model.safetensors (model=gpt: `dagrad eval`, `dagrad generate`,
// tools/reference/gpt.py), loss.svg, attention.svg, forward.dot,
// train_step.dot and forward.svg (models/run_outputs.h, which says
// when it draws none); it prints a generated sample at the end, as valid
// UTF-8 (TerminalText). Under mpirun the
// ranks train data parallel (models/gpt/gpt_trainer.h); rank 0 alone prints,
// validates, samples and writes. --init=FILE starts from a GPT model file's
// weights (models::StartFromModelFile). With --init=DIR it fine-tunes a
// Hugging Face GPT-2 directory instead (models/gpt2/fine_tune.h) and writes
// the same files but attention.svg, its model.safetensors a gpt2 model file
// (`dagrad eval`, `dagrad generate`, `dagrad export --format=hf`); its
// dropouts are config.json's attn_pdrop, embd_pdrop and resid_pdrop, or
// all three --dropout when that flag is given.

#include "engine/io/file_io.h"
#include "tools/cli/train_run.h"

#include <iostream>
#include <optional>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt_trainer.h"
#include "models/gpt2/fine_tune.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/language_model.h"
#include "tools/cli/common_flags.h"

ABSL_FLAG(std::string, data, "", "--task=text: the text file to train on (bytes are tokens)");
ABSL_FLAG(int64_t, eval_windows, 0,
          "--task=text: validation windows scored, >= 0; 0: every window of the split (its "
          "last 10%, in windows of --seq_len bytes), N: the first N");
ABSL_FLAG(std::string, init, "",
          "--task=text: fine-tune this Hugging Face GPT-2 directory (config.json, "
          "model.safetensors, vocab.json, merges.txt) from its weights, its text encoded by its "
          "tokenizer, in windows of --seq_len tokens; a file: start from the weights and sizes "
          "of this byte-level GPT's model.safetensors; empty: a new byte-level GPT");
ABSL_DECLARE_FLAG(int64_t, seq_len);
ABSL_DECLARE_FLAG(int64_t, dim);
ABSL_DECLARE_FLAG(int64_t, heads);
ABSL_DECLARE_FLAG(int64_t, layers);
ABSL_DECLARE_FLAG(double, dropout);

namespace dagrad::cli {
namespace {

absl::StatusOr<models::TextTrainConfig> TextConfigFromFlags(const models::RunConfig& run) {
  models::TextTrainConfig c;
  c.data = absl::GetFlag(FLAGS_data);
  if (c.data.empty()) return absl::InvalidArgumentError("--task=text needs --data=FILE");
  DAGRAD_RETURN_IF_ERROR(RefuseFlagsNotFor(
      {"vocab", "min_len", "ffn"}, "the toy tasks (reverse, copy, sort)",
      "--task=text's tokens are the 256 byte values, its windows are all --seq_len long and "
      "its feed-forward width is 4 x --dim"));
  if (absl::GetFlag(FLAGS_seq_len) < 1) {  // the GPT's block_size, which no flag is named
    return absl::InvalidArgumentError(
        absl::StrCat("--seq_len must be >= 1, got ", absl::GetFlag(FLAGS_seq_len)));
  }
  c.model = {.block_size = absl::GetFlag(FLAGS_seq_len),
             .dim = absl::GetFlag(FLAGS_dim),
             .heads = absl::GetFlag(FLAGS_heads),
             .layers = absl::GetFlag(FLAGS_layers),
             .dropout = absl::GetFlag(FLAGS_dropout)};
  DAGRAD_ASSIGN_OR_RETURN(c.model.attention, AttentionFromFlags());
  if (const std::string init = absl::GetFlag(FLAGS_init); !init.empty()) {
    DAGRAD_RETURN_IF_ERROR(RefuseFlagsNotFor({"dim", "heads", "layers", "seq_len"}, "a new model",
                                             "--init's model is its file's"));
    DAGRAD_RETURN_IF_ERROR(models::StartFromModelFile(c, init));
  }
  c.run = run;
  c.eval_windows = absl::GetFlag(FLAGS_eval_windows);
  if (c.eval_windows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_windows must be >= 0 (0: the whole split), got ", c.eval_windows));
  }
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  return c;
}

// RunFineTune fine-tunes --init (models::CreateGpt2FineTuner) in the
// loop every task shares.
int RunFineTune(const Command& cmd, const models::RunConfig& run,
                const DataParallelOptions& parallel, Job& job) {
  const std::string init = absl::GetFlag(FLAGS_init), data = absl::GetFlag(FLAGS_data);
  absl::Status usage = RefuseFlagsNotFor({"dim", "heads", "layers", "vocab", "min_len", "ffn"},
                                         "a new model", "--init's model is its config's");
  if (usage.ok() && data.empty()) usage = absl::InvalidArgumentError("--init needs --data=FILE");
  if (!usage.ok()) return Failure(cmd, usage);
  absl::StatusOr<models::Gpt2Config> hf = models::ReadHfGpt2Config(init);
  if (!hf.ok()) return Failure(cmd, hf.status());
  const absl::StatusOr<nn::AttentionPath> attention = AttentionFromFlags();
  if (!attention.ok()) return Failure(cmd, attention.status());
  const models::LmTrainConfig config{.run = run, .eval_windows = absl::GetFlag(FLAGS_eval_windows)};
  // config.json's dropouts, unless --dropout is given (even at its default).
  const models::Gpt2FineTune tune = {
      .hf_dir = init,
      .text_path = data,
      .seq_len = absl::GetFlag(FLAGS_seq_len),
      .dropout = FlagGiven("dropout") ? std::optional(absl::GetFlag(FLAGS_dropout)) : std::nullopt,
      .attention = *attention};
  TrainingRun training{
      .steps = run.steps,
      .default_out = "runs/text",
      .outputs = {.title = "gpt2", .layers = hf->layers},
      .create = [&](std::unique_ptr<Device> device)
          -> absl::StatusOr<std::unique_ptr<models::Trainer>> {
        if (job.writer()) {
          std::cout << "task text: fine-tuning " << init << " on " << data << std::endl;
        }
        return models::CreateGpt2FineTuner(tune, config, std::move(device), parallel);
      }};
  return RunTraining(cmd, training, job);
}

}  // namespace

int RunTextTrain(const Command& cmd, const models::RunConfig& run, const DataParallelOptions& parallel,
                 Job& job) {
  if (IsDirectory(absl::GetFlag(FLAGS_init))) {
    if (absl::Status st = models::RefuseRunDirectory(absl::GetFlag(FLAGS_init)); !st.ok()) {
      return Failure(cmd, absl::InvalidArgumentError(absl::StrCat("--init: ", st.message())));
    }
    return RunFineTune(cmd, run, parallel, job);
  }
  absl::StatusOr<models::TextTrainConfig> config = TextConfigFromFlags(run);
  if (!config.ok()) return Failure(cmd, config.status());
  TrainingRun training{
      .steps = config->run.steps,
      .default_out = "runs/text",
      .outputs = {.title = "gpt", .layers = config->model.layers},
      .create = [&](std::unique_ptr<Device> device)
          -> absl::StatusOr<std::unique_ptr<models::Trainer>> {
        if (job.writer()) std::cout << "task text: a byte-level GPT on " << config->data << std::endl;
        return models::GptTrainer::Create(*config, std::move(device), parallel);
      }};
  return RunTraining(cmd, training, job);
}

}  // namespace dagrad::cli
