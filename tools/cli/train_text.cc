// `dagrad train --task=text --data=FILE`: trains models::Gpt byte-level on a
// text file (models/gpt/gpt_trainer.h) in the loop every task shares
// (RunTraining: stop signals, --resume, --on_nonfinite, the previous
// checkpoint kept) and writes to --out: checkpoint.safetensors (every
// --eval_every steps), metrics.csv (validation loss in eval_loss),
// model.safetensors (model=gpt: `dagrad eval`, `dagrad generate`,
// tools/reference/gpt.py), loss.svg, attention.svg, forward.dot,
// train_step.dot and forward.svg (TrainOutputs::RenderForward, which says
// when it draws none); it prints a generated sample at the end, as valid
// UTF-8 (TerminalText). Under mpirun the
// ranks train data parallel (models/gpt/gpt_trainer.h); rank 0 alone prints,
// validates, samples and writes.

#include "tools/cli/train_text.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/dot/dot.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt_trainer.h"
#include "models/plot/plots.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/train_parallel.h"

ABSL_FLAG(std::string, data, "", "--task=text: the text file to train on (bytes are tokens)");
ABSL_FLAG(int64_t, eval_windows, 0,
          "--task=text: validation windows scored, >= 0; 0: every window of the split (its "
          "last 10%, in windows of --seq_len bytes), N: the first N");
ABSL_DECLARE_FLAG(int64_t, seq_len);
ABSL_DECLARE_FLAG(int64_t, dim);
ABSL_DECLARE_FLAG(int64_t, heads);
ABSL_DECLARE_FLAG(int64_t, layers);
ABSL_DECLARE_FLAG(double, dropout);

namespace dagrad::cli {
namespace {

absl::StatusOr<models::TextTrainConfig> ConfigFromFlags(const models::RunConfig& run) {
  models::TextTrainConfig c;
  c.data = absl::GetFlag(FLAGS_data);
  if (c.data.empty()) return absl::InvalidArgumentError("--task=text needs --data=FILE");
  DAGRAD_RETURN_IF_ERROR(RefuseFlagsNotFor(
      {"vocab", "min_len", "ffn"}, "the toy tasks (reverse, copy, sort)",
      "--task=text's tokens are the 256 byte values, its windows are all --seq_len long and "
      "its feed-forward width is 4 x --dim"));
  c.model = {.block_size = absl::GetFlag(FLAGS_seq_len),
             .dim = absl::GetFlag(FLAGS_dim),
             .heads = absl::GetFlag(FLAGS_heads),
             .layers = absl::GetFlag(FLAGS_layers),
             .dropout = absl::GetFlag(FLAGS_dropout)};
  DAGRAD_ASSIGN_OR_RETURN(c.model.attention, AttentionFromFlags());
  c.run = run;
  c.eval_windows = absl::GetFlag(FLAGS_eval_windows);
  if (c.eval_windows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval_windows must be >= 0 (0: the whole split), got ", c.eval_windows));
  }
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  return c;
}

// AttentionSvg draws the attention weights of the first validation window.
absl::Status AttentionSvg(models::GptTrainer& t, const std::string& path) {
  std::string window;
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> weights, t.Attention(&window));
  std::vector<std::string> labels;
  for (char ch : window) {
    labels.push_back(ch >= 32 && ch < 127 ? std::string(1, ch)
                                          : absl::StrFormat("%02x", ch & 0xff));
  }
  return WriteFileAtomically(
      path, plot::AttentionHeatmaps(weights, labels,
                                    "causal attention on the first validation window (row: "
                                    "query, column: key)"));
}

// GraphDots writes forward.dot and train_step.dot.
absl::Status GraphDots(models::GptTrainer& t, const std::string& dir) {
  DAGRAD_ASSIGN_OR_RETURN(std::string forward,
                          ToDot(t.graph(), {t.logits(), t.loss()},
                                {.title = "gpt: forward", .losses = {t.loss()}}));
  DAGRAD_RETURN_IF_ERROR(WriteDotFile(dir + "/forward.dot", forward));
  std::vector<Value> roots = t.training_step().updates;
  roots.push_back(t.loss());
  DAGRAD_ASSIGN_OR_RETURN(std::string step,
                          ToDot(t.graph(), roots,
                                {.title = "gpt: training step", .losses = {t.loss()}}));
  return WriteDotFile(dir + "/train_step.dot", step);
}

// Finish writes the model, the pictures and the graphs, asking `stop`
// between files, and prints the validation loss and a sample continuing
// the validation text's first bytes (TrainingRun::finish).
absl::Status Finish(models::GptTrainer& t, const Job& job, const std::string& dir,
                    const models::EvalResult& final_eval, TrainOutputs& outputs,
                    const std::function<bool()>& stop) {
  auto stopped = [&stop] {
    return stop() ? absl::CancelledError("stopped while writing the outputs")
                  : absl::OkStatus();
  };
  DAGRAD_RETURN_IF_ERROR(t.SaveModel(dir + "/model.safetensors"));
  DAGRAD_RETURN_IF_ERROR(stopped());
  DAGRAD_RETURN_IF_ERROR(outputs.WriteLossSvg());
  DAGRAD_RETURN_IF_ERROR(AttentionSvg(t, dir + "/attention.svg"));
  DAGRAD_RETURN_IF_ERROR(stopped());
  DAGRAD_RETURN_IF_ERROR(GraphDots(t, dir));
  DAGRAD_RETURN_IF_ERROR(stopped());
  std::vector<std::string> written = {"model.safetensors", "checkpoint.safetensors",
                                      "metrics.csv",       "loss.svg",
                                      "attention.svg",     "forward.dot",
                                      "train_step.dot"};
  if (std::filesystem::exists(outputs.previous_checkpoint_path())) {
    written.insert(written.begin() + 2, "checkpoint.prev.safetensors");
  }
  outputs.SetWritten(std::move(written));
  DAGRAD_RETURN_IF_ERROR(outputs.RenderForward(t.config().model.layers));
  DAGRAD_RETURN_IF_ERROR(stopped());
  const std::string& text = t.data().validation();
  const std::string prompt = text.substr(0, std::min<size_t>(16, text.size()));
  DAGRAD_ASSIGN_OR_RETURN(
      std::string sample,
      t.Sample(prompt, 200, {.temperature = 0.8, .seed = t.config().run.seed}));
  const int64_t all = t.data().validation_windows();
  std::cout << absl::StrFormat(
      "validation loss %.4f nats/byte over %s after %d steps\n", final_eval.loss,
      t.eval_windows() == all
          ? absl::StrCat("the whole split (", all, " windows)")
          : absl::StrCat(t.eval_windows(), " of the split's ", all, " windows (--eval_windows)"),
      t.step());
  outputs.PrintSummary(std::cout);
  std::cout << "sample:\n" << TerminalText(sample) << "\n";
  if (t.config().run.profile) std::cout << StepProfile(t.train_plan().profile(), job);
  return absl::OkStatus();
}

}  // namespace

int RunTextTrain(const Command& cmd, const models::RunConfig& run, const DataParallelOptions& parallel,
                 Job& job) {
  absl::StatusOr<models::TextTrainConfig> config = ConfigFromFlags(run);
  if (!config.ok()) return UsageError(cmd, std::string(config.status().message()));
  const std::string dir = absl::GetFlag(FLAGS_out).empty() ? "runs/text" : absl::GetFlag(FLAGS_out);
  models::GptTrainer* gpt = nullptr;  // owned by RunTraining
  TrainingRun training{
      .steps = config->run.steps,
      .default_out = dir,
      .create = [&](std::unique_ptr<Device> device)
          -> absl::StatusOr<std::unique_ptr<models::Trainer>> {
        if (job.writer()) std::cout << "task text: a byte-level GPT on " << config->data << "\n";
        DAGRAD_ASSIGN_OR_RETURN(
            auto t, models::GptTrainer::Create(*config, std::move(device), parallel));
        gpt = t.get();
        return t;
      },
      .finish = [&](const models::EvalResult& final_eval, TrainOutputs& outputs,
                    const std::function<bool()>& stop) {
        return Finish(*gpt, job, dir, final_eval, outputs, stop);
      }};
  return RunTraining(cmd, training, job);
}

}  // namespace dagrad::cli
