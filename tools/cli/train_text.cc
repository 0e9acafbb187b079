// `dagrad train --task=text --data=FILE`: trains models::Gpt byte-level on a
// text file (models/gpt_trainer.h) and writes to --out: checkpoint.safetensors
// (every --eval_every steps; --resume continues from it), metrics.csv
// (step, train_loss, val_loss, lr, elapsed_s), model.safetensors (model=gpt:
// `dagrad eval`, `dagrad generate`, tools/reference/gpt.py), loss.svg,
// attention.svg, forward.dot and train_step.dot; it prints a generated
// sample at the end.

#include "tools/cli/train_text.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/dot.h"
#include "engine/file_io.h"
#include "engine/status_macros.h"
#include "models/gpt_trainer.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/svg_plot.h"

ABSL_FLAG(std::string, data, "",
          "--task=text: the text file to train on (bytes are tokens)");
ABSL_DECLARE_FLAG(int64_t, seq_len);
ABSL_DECLARE_FLAG(int64_t, dim);
ABSL_DECLARE_FLAG(int64_t, heads);
ABSL_DECLARE_FLAG(int64_t, layers);
ABSL_DECLARE_FLAG(double, dropout);
ABSL_DECLARE_FLAG(int64_t, batch);
ABSL_DECLARE_FLAG(int64_t, steps);
ABSL_DECLARE_FLAG(double, lr);
ABSL_DECLARE_FLAG(int64_t, warmup);
ABSL_DECLARE_FLAG(std::string, optimizer);
ABSL_DECLARE_FLAG(double, weight_decay);
ABSL_DECLARE_FLAG(double, clip);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(bool, resume);
ABSL_DECLARE_FLAG(int64_t, eval_every);
ABSL_DECLARE_FLAG(int64_t, stop_after);

namespace dagrad::cli {
namespace {

struct Row {
  int64_t step;
  double train_loss, val_loss, lr, elapsed;
};

constexpr char kHeader[] = "step,train_loss,val_loss,lr,elapsed_s";

std::string FormatRows(const std::vector<Row>& rows) {
  std::string text = absl::StrCat(kHeader, "\n");
  for (const Row& r : rows) {
    absl::StrAppendFormat(&text, "%d,%.6f,%.6f,%.6g,%.3f\n", r.step,
                          r.train_loss, r.val_loss, r.lr, r.elapsed);
  }
  return text;
}

// KeptRows reads dir's metrics.csv rows up to `step` (for --resume).
std::vector<Row> KeptRows(const std::string& path, int64_t step) {
  std::vector<Row> rows;
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return rows;
  for (absl::string_view line :
       absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    Row r;
    if (f.size() == 5 && absl::SimpleAtoi(f[0], &r.step) &&
        absl::SimpleAtod(f[1], &r.train_loss) &&
        absl::SimpleAtod(f[2], &r.val_loss) && absl::SimpleAtod(f[3], &r.lr) &&
        absl::SimpleAtod(f[4], &r.elapsed) && r.step <= step) {
      rows.push_back(r);
    }
  }
  return rows;
}

absl::StatusOr<models::TextTrainConfig> ConfigFromFlags() {
  models::TextTrainConfig c;
  c.data = absl::GetFlag(FLAGS_data);
  if (c.data.empty())
    return absl::InvalidArgumentError("--task=text needs --data=FILE");
  auto kind = ParseOptimizerKind(absl::GetFlag(FLAGS_optimizer));
  if (!kind.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("--optimizer: ", kind.status().message()));
  c.model = {.block_size = absl::GetFlag(FLAGS_seq_len),
             .dim = absl::GetFlag(FLAGS_dim),
             .heads = absl::GetFlag(FLAGS_heads),
             .layers = absl::GetFlag(FLAGS_layers),
             .dropout = absl::GetFlag(FLAGS_dropout)};
  c.batch = absl::GetFlag(FLAGS_batch);
  c.steps = absl::GetFlag(FLAGS_steps);
  c.lr = absl::GetFlag(FLAGS_lr);
  c.warmup = absl::GetFlag(FLAGS_warmup);
  c.optimizer = {.kind = *kind,
                 .weight_decay = absl::GetFlag(FLAGS_weight_decay),
                 .clip_norm = absl::GetFlag(FLAGS_clip)};
  c.seed = absl::GetFlag(FLAGS_seed);
  DAGRAD_RETURN_IF_ERROR(c.Validate());
  if (absl::GetFlag(FLAGS_eval_every) < 1) {
    return absl::InvalidArgumentError("--eval_every must be >= 1");
  }
  return c;
}

absl::Status WritePictures(models::GptTrainer& t, const std::vector<Row>& rows,
                           const std::string& dir) {
  Series train{"train"}, val{"validation"};
  for (const Row& r : rows) {
    train.x.push_back(r.step), train.y.push_back(r.train_loss);
    val.x.push_back(r.step), val.y.push_back(r.val_loss);
  }
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/loss.svg",
      RenderSvg(640, 340,
                {Panel::Line({"loss", "step", "nats per byte", {train, val}}, 0,
                             20, 640, 320)},
                "training on " + t.config().data)));
  std::string window;
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> weights, t.Attention(&window));
  std::vector<std::string> labels;
  for (char ch : window) {
    labels.push_back(ch >= 32 && ch < 127 ? std::string(1, ch)
                                          : absl::StrFormat("%02x", ch & 0xff));
  }
  const int64_t H = t.config().model.heads, T = t.config().model.block_size;
  const double cell = 230;
  std::vector<Panel> panels;
  for (size_t l = 0; l < weights.size(); ++l) {
    for (int64_t h = 0; h < H; ++h) {
      Heatmap m{.title = absl::StrCat("layer ", l, ", head ", h),
                .rows = int(T),
                .cols = int(T)};
      const float* w = weights[l].data<float>() + h * T * T;
      m.values.assign(w, w + T * T);
      m.row_labels = m.col_labels = labels;
      m.row_axis = "query", m.col_axis = "key";
      panels.push_back(
          Panel::Map(std::move(m), h * cell, 30 + l * cell, cell, cell));
    }
  }
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/attention.svg",
      RenderSvg(cell * H, 30 + cell * weights.size(), panels,
                "causal attention on the first validation window (row: query, "
                "column: key)")));
  DAGRAD_ASSIGN_OR_RETURN(
      std::string forward,
      ToDot(t.graph(), {t.logits(), t.loss()},
            {.title = "gpt: forward", .losses = {t.loss()}}));
  DAGRAD_RETURN_IF_ERROR(WriteDotFile(dir + "/forward.dot", forward));
  std::vector<Value> roots = t.training_step().updates;
  roots.push_back(t.loss());
  DAGRAD_ASSIGN_OR_RETURN(
      std::string step,
      ToDot(t.graph(), roots,
            {.title = "gpt: training step", .losses = {t.loss()}}));
  return WriteDotFile(dir + "/train_step.dot", step);
}

// Train runs the steps, evaluating and checkpointing every eval_every.
absl::Status Train(models::GptTrainer& t, const std::string& dir, int64_t last,
                   std::vector<Row>& rows) {
  const int64_t every = absl::GetFlag(FLAGS_eval_every),
                steps = t.config().steps;
  const int64_t first = t.step();
  const double before = rows.empty() ? 0 : rows.back().elapsed;
  const auto start = std::chrono::steady_clock::now();
  double loss_sum = 0;
  int64_t in_window = 0;
  while (t.step() < last) {
    DAGRAD_ASSIGN_OR_RETURN(models::TextStepResult r, t.Step());
    loss_sum += r.loss, ++in_window;
    if (r.step % every != 0 && r.step != last) continue;
    DAGRAD_ASSIGN_OR_RETURN(double val, t.Evaluate());
    const double elapsed =
        before +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    rows.push_back({r.step, loss_sum / in_window, val, r.lr, elapsed});
    loss_sum = 0, in_window = 0;
    DAGRAD_RETURN_IF_ERROR(
        WriteFileAtomically(dir + "/metrics.csv", FormatRows(rows)));
    DAGRAD_RETURN_IF_ERROR(t.SaveCheckpoint(dir + "/checkpoint.safetensors"));
    std::cout << absl::StrFormat(
        "step %d/%d  train loss %.4f  val loss %.4f  %.1f steps/s\n", r.step,
        steps, rows.back().train_loss, val,
        (r.step - first) / std::max(elapsed - before, 1e-9));
  }
  return absl::OkStatus();
}

// Finish writes the model and pictures and prints the validation loss and
// a sample continuing the validation text's first bytes.
absl::Status Finish(models::GptTrainer& t, const std::vector<Row>& rows,
                    const std::string& dir) {
  DAGRAD_ASSIGN_OR_RETURN(const double val, t.Evaluate());
  DAGRAD_RETURN_IF_ERROR(t.SaveModel(dir + "/model.safetensors"));
  DAGRAD_RETURN_IF_ERROR(WritePictures(t, rows, dir));
  const std::string& text = t.data().validation();
  const std::string prompt = text.substr(0, std::min<size_t>(16, text.size()));
  DAGRAD_ASSIGN_OR_RETURN(
      std::string sample,
      t.Sample(prompt, 200, {.temperature = 0.8, .seed = t.config().seed}));
  std::cout << absl::StrFormat("validation loss %.4f nats/byte after %d steps\n", val,
                               t.step())
            << "wrote model.safetensors, checkpoint.safetensors, metrics.csv, loss.svg, "
               "attention.svg, forward.dot, train_step.dot to "
            << dir << "\nsample:\n"
            << sample << "\n";
  return absl::OkStatus();
}

}  // namespace

int RunTextTrain(const Command& cmd) {
  absl::StatusOr<models::TextTrainConfig> config = ConfigFromFlags();
  if (!config.ok())
    return UsageError(cmd, std::string(config.status().message()));
  absl::StatusOr<ExecutorOptions> exec_options = ExecutorOptionsFromFlags();
  if (!exec_options.ok())
    return UsageError(cmd, std::string(exec_options.status().message()));
  config->check_numerics = exec_options->check_numerics;
  config->memory_limit_bytes = exec_options->memory_limit_bytes;
  const std::string dir =
      absl::GetFlag(FLAGS_out).empty() ? "runs/text" : absl::GetFlag(FLAGS_out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return UsageError(
        cmd, absl::StrCat("--out: cannot create ", dir, ": ", ec.message()));
  absl::StatusOr<std::unique_ptr<Device>> device = DeviceFromFlags();
  if (!device.ok()) return Failure(cmd, device.status());
  std::cout << "training a GPT on " << config->data << " (" << (*device)->name()
            << ")\n";
  auto trainer = models::GptTrainer::Create(*config, *std::move(device));
  if (!trainer.ok()) return Failure(cmd, trainer.status());
  models::GptTrainer& t = **trainer;
  std::vector<Row> rows;
  if (absl::GetFlag(FLAGS_resume)) {
    if (absl::Status st = t.LoadCheckpoint(dir + "/checkpoint.safetensors");
        !st.ok()) {
      return Failure(cmd, st);
    }
    rows = KeptRows(dir + "/metrics.csv", t.step());
    std::cout << "resumed at step " << t.step() << "\n";
  }
  const int64_t stop_after = absl::GetFlag(FLAGS_stop_after);
  const int64_t last =
      stop_after > 0 ? std::min(stop_after, config->steps) : config->steps;
  if (absl::Status st = Train(t, dir, last, rows); !st.ok())
    return Failure(cmd, st);
  if (t.step() < config->steps) {
    std::cout << "stopped after step " << t.step()
              << "; continue with --resume\n";
    return kExitOk;
  }
  if (absl::Status st = Finish(t, rows, dir); !st.ok()) return Failure(cmd, st);
  return kExitOk;
}

}  // namespace dagrad::cli
