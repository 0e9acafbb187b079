// tools/cli/eval_gpt.h
//
// `dagrad eval` on a GPT checkpoint (metadata model=gpt): logits for the
// input's tokens and, given targets (-100 ignored), the mean cross-entropy
// and every parameter's gradient, as for the toy model (eval_command.cc).

#ifndef DAGRAD_TOOLS_CLI_EVAL_GPT_H_
#define DAGRAD_TOOLS_CLI_EVAL_GPT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/io/safetensors.h"

namespace dagrad::cli {

// WriteEvalResult writes `output` for `dagrad eval` on either model: the
// metadata names the checkpoint and input, then logits = out[0] and, with
// targets, loss = out[1] and grad.<checkpoint name> = out[2 + i] for each of
// `params`.
absl::Status WriteEvalResult(const std::string& output, const std::string& checkpoint,
                             const std::string& input, const std::vector<Tensor>& out,
                             const std::vector<Value>& params, bool with_targets);

// IsGptCheckpoint says whether the checkpoint's metadata names model=gpt.
bool IsGptCheckpoint(const SafetensorsFile& checkpoint);

// EvaluateGpt writes `output` (logits; with targets loss and grad.<name>)
// for the tensors of `input` (tokens int64 (B, T), T <= block_size, and
// optional targets int64 (B, T)). InvalidArgument naming the input file for
// unexpected tensors, dtypes, shapes or token values.
absl::Status EvaluateGpt(const SafetensorsFile& checkpoint,
                         const std::string& checkpoint_path,
                         const std::string& input, const std::string& output,
                         std::unique_ptr<Device> device,
                         const ExecutorOptions& options);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_EVAL_GPT_H_
