// `dagrad generate`: continues a prompt with a causal model, a checkpoint
// (--checkpoint: the byte-level GPT of `dagrad train --task=text`) or a
// Hugging Face GPT-2 directory (--model=DIR, its text tokenized by GPT-2's
// tokenizer), and writes the prompt and the continuation, and nothing
// else, to stdout: valid UTF-8 as it is, other bytes as \xNN
// (TerminalText, engine/io/utf8.h).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/generator.h"
#include "models/gpt/tokenizer.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"

ABSL_DECLARE_FLAG(std::string, checkpoint);  // eval_command.cc
ABSL_DECLARE_FLAG(std::string, model);       // dot_command.cc
ABSL_DECLARE_FLAG(uint64_t, seed);           // run_config_flags.cc
ABSL_FLAG(std::string, prompt, "", "the text to continue");
ABSL_FLAG(std::string, prompt_file, "",
          "read the prompt from this file (instead of --prompt)");
ABSL_FLAG(int64_t, tokens, 200, "tokens to generate (bytes, for a byte-level GPT), >= 0");
ABSL_FLAG(double, temperature, 1.0,
          "0: greedy; else sample from softmax(logits / temperature)");
ABSL_FLAG(int64_t, top_k, 0,
          "sample among the k most likely tokens only (0: all)");
ABSL_FLAG(bool, kv_cache, true,
          "keep keys and values of earlier positions (false: recompute)");
ABSL_FLAG(bool, timing, false, "print tokens/s on stderr");

namespace dagrad::cli {
namespace {

absl::StatusOr<std::string> Prompt() {
  const std::string file = absl::GetFlag(FLAGS_prompt_file);
  if (!file.empty() && !absl::GetFlag(FLAGS_prompt).empty()) {
    return absl::InvalidArgumentError(
        "give --prompt or --prompt_file, not both");
  }
  std::string prompt = absl::GetFlag(FLAGS_prompt);
  if (!file.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(prompt, ReadFile(file));
  }
  if (prompt.empty())
    return absl::InvalidArgumentError("the prompt is empty (--prompt)");
  return prompt;
}

// Codec turns the prompt into tokens and a token into its bytes: GPT-2's
// tokenizer for a Hugging Face directory, one byte a token otherwise.
struct Codec {
  std::vector<int64_t> prompt;
  std::function<std::string(int64_t)> bytes;
};

absl::StatusOr<Codec> CodecFor(const std::string& path, const std::string& prompt) {
  if (!std::filesystem::is_directory(path)) {
    return Codec{models::BytesToTokens(prompt),
                 [](int64_t t) { return std::string(1, static_cast<char>(t & 0xff)); }};
  }
  DAGRAD_ASSIGN_OR_RETURN(auto tokenizer, models::Gpt2Tokenizer::LoadDirectory(path));
  auto shared = std::make_shared<models::Gpt2Tokenizer>(std::move(tokenizer));
  return Codec{shared->Encode(prompt),
               [shared](int64_t t) { return shared->Decode({t}).value_or(""); }};
}

// ModelPath is --model (a Hugging Face GPT-2 directory) or --checkpoint.
absl::StatusOr<std::string> ModelPath() {
  const std::string model = absl::GetFlag(FLAGS_model);
  const std::string checkpoint = absl::GetFlag(FLAGS_checkpoint);
  if (!model.empty() && !checkpoint.empty()) {
    return absl::InvalidArgumentError("give --checkpoint or --model, not both");
  }
  if (model.empty() && checkpoint.empty()) {
    return absl::InvalidArgumentError(
        "--checkpoint is required (or --model=DIR, a Hugging Face GPT-2 directory)");
  }
  return model.empty() ? checkpoint : model;
}

int RunGenerate() {
  const Command cmd = GenerateCommand();
  if (absl::Status st = ApplyThreadsFlag(); !st.ok())
    return UsageError(cmd, std::string(st.message()));
  absl::StatusOr<std::string> path = ModelPath();
  if (!path.ok()) return UsageError(cmd, std::string(path.status().message()));
  absl::StatusOr<std::string> prompt = Prompt();
  if (!prompt.ok()) return Failure(cmd, prompt.status());
  models::GenerateOptions options{
      .tokens = absl::GetFlag(FLAGS_tokens),
      .sampling = {.temperature = absl::GetFlag(FLAGS_temperature),
                   .top_k = absl::GetFlag(FLAGS_top_k),
                   .seed = absl::GetFlag(FLAGS_seed)},
      .kv_cache = absl::GetFlag(FLAGS_kv_cache)};
  absl::StatusOr<std::unique_ptr<Device>> device = DeviceFromFlags();
  if (!device.ok()) return Failure(cmd, device.status());
  absl::StatusOr<nn::AttentionPath> attention = AttentionFromFlags();
  if (!attention.ok()) return UsageError(cmd, std::string(attention.status().message()));
  absl::StatusOr<Codec> codec = CodecFor(*path, *prompt);
  if (!codec.ok()) return Failure(cmd, codec.status());
  auto gen = models::Generator::Load(*path, *std::move(device), {.attention = *attention});
  if (!gen.ok()) return Failure(cmd, gen.status());
  // The prompt, then each token's bytes as it is drawn, as valid UTF-8
  // (TerminalText): a sequence still incomplete waits for its next bytes.
  std::string pending = *prompt;
  auto write = [&pending](bool all) {
    const size_t ready = pending.size() - (all ? 0 : IncompleteTail(pending));
    const std::string text = TerminalText(absl::string_view(pending).substr(0, ready));
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    pending.erase(0, ready);
  };
  write(false);
  options.on_token = [&](int64_t token) {
    pending += codec->bytes(token);
    write(false);
  };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<int64_t>> more = (*gen)->Generate(codec->prompt, options);
  write(true);
  if (!more.ok()) return Failure(cmd, more.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (absl::GetFlag(FLAGS_timing)) {
    std::cerr << absl::StrFormat(
        "%d tokens in %.3f s: %.1f tokens/s (kv_cache %s)\n", more->size(),
        seconds, more->size() / std::max(seconds, 1e-9),
        options.kv_cache ? "on" : "off");
  }
  return kExitOk;
}

}  // namespace

Command GenerateCommand() {
  return {"generate",
          "continue a prompt with a GPT checkpoint or a Hugging Face GPT-2 directory (prompt + "
          "continuation on stdout)",
          {"checkpoint", "model", "prompt", "prompt_file", "tokens", "temperature",
           "top_k", "seed", "kv_cache", "timing", "threads", "wait_policy", "device", "attention"},
          RunGenerate};
}

}  // namespace dagrad::cli
