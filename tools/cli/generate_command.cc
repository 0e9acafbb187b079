// `dagrad generate`: continues a prompt with a causal model, a checkpoint (--checkpoint: the
// byte-level GPT of `dagrad train --task=text`, or a fine-tuned GPT-2 read through the tokenizer it
// records or --tokenizer) or a Hugging Face GPT-2 directory (--model=DIR, its text tokenized by
// GPT-2's tokenizer), and writes the prompt and the continuation, and nothing
// else, to stdout: valid UTF-8 as it is but for control characters other than line breaks and
// tabs, those and bytes that are not UTF-8 as \xNN (TerminalStream, engine/io/utf8.h).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/generator.h"
#include "models/text_codec.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"

ABSL_DECLARE_FLAG(uint64_t, seed);           // run_config_flags.cc
ABSL_DECLARE_FLAG(std::string, tokenizer);   // export_command.cc
ABSL_FLAG(std::string, prompt, "", "the text to continue");
ABSL_FLAG(std::string, prompt_file, "", "read the prompt from this file (instead of --prompt)");
ABSL_FLAG(int64_t, tokens, 200, "tokens to generate (bytes, for a byte-level GPT), >= 0");
ABSL_FLAG(double, temperature, 1.0, "0: greedy; else sample from softmax(logits / temperature)");
ABSL_FLAG(int64_t, top_k, 0, "sample among the k most likely tokens only (0: all)");
ABSL_FLAG(double, top_p, 1.0,
          "sample among the fewest likeliest tokens whose probabilities reach top_p (1: all)");
ABSL_FLAG(bool, kv_cache, true, "keep keys and values of earlier positions (false: recompute)");
ABSL_FLAG(bool, timing, false, "print tokens/s on stderr");

namespace dagrad::cli {
namespace {

absl::StatusOr<std::string> Prompt() {
  const std::string file = absl::GetFlag(FLAGS_prompt_file);
  if (!file.empty() && !absl::GetFlag(FLAGS_prompt).empty()) {
    return absl::InvalidArgumentError("give --prompt or --prompt_file, not both");
  }
  std::string prompt = absl::GetFlag(FLAGS_prompt);
  if (!file.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(prompt, ReadFile(file));
  }
  if (prompt.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the prompt is empty (", file.empty() ? "--prompt" : "--prompt_file=" + file, ")"));
  }
  return prompt;
}

// TokenizerToRead: --tokenizer, or else the one a model file records (empty:
// none, the model reads bytes).
absl::StatusOr<std::string> TokenizerToRead(const std::string& path) {
  if (!absl::GetFlag(FLAGS_tokenizer).empty()) return absl::GetFlag(FLAGS_tokenizer);
  if (IsDirectory(path)) return "";
  absl::StatusOr<std::string> recorded = models::RecordedTokenizerDir(path);
  if (absl::IsNotFound(recorded.status())) return "";
  return recorded;
}

// CodecFor: the codec of the model at `path` through `tokenizer`
// (models/text_codec.h), naming where a recorded tokenizer came from.
absl::StatusOr<models::TextCodec> CodecFor(const std::string& path, const std::string& tokenizer) {
  absl::StatusOr<models::TextCodec> codec = models::TextCodecFor(path, tokenizer);
  if (!codec.ok() && !tokenizer.empty() && absl::GetFlag(FLAGS_tokenizer).empty()) {
    return absl::Status(codec.status().code(),
                        absl::StrCat(path, " records the tokenizer '", tokenizer,
                                     "' (or give --tokenizer=DIR): ", codec.status().message()));
  }
  return codec;
}

// CheckCodecFitsModel, before any output: a model file read one byte a
// token has at most 256 ids, which a fine-tuned GPT-2 does not; and a
// tokenizer with more ids than the model is not the one it learnt (a
// byte-level GPT read through GPT-2's tokenizer; the other way round, a
// model may have ids its tokenizer lacks, as nanoGPT's padded vocabulary).
absl::Status CheckCodecFitsModel(const std::string& path, const std::string& tokenizer,
                                 const models::TextCodec& codec, int64_t vocab) {
  if (tokenizer.empty() && !IsDirectory(path) && vocab > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " records no tokenizer, and its ", vocab,
        " token ids are a tokenizer's, not bytes: give --tokenizer=DIR (vocab.json, merges.txt)"));
  }
  if (codec.vocab > vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the tokenizer of ", tokenizer.empty() ? path : tokenizer, " has ", codec.vocab,
        " ids, more than the ", vocab, " of ", path, ": it is not the model's tokenizer"));
  }
  return absl::OkStatus();
}

absl::Status Generate() {
  DAGRAD_RETURN_IF_ERROR(ApplyThreadsFlag());
  DAGRAD_ASSIGN_OR_RETURN(const std::string path,
                          ModelPathFromFlags(GenerateCommand(), /*onnx=*/false));
  DAGRAD_ASSIGN_OR_RETURN(const std::string prompt, Prompt());
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> device, DeviceFromFlags());
  DAGRAD_ASSIGN_OR_RETURN(const nn::AttentionPath attention, AttentionFromFlags());
  // The model first: a path that is no model (a run's folder) is named as
  // such, not by the tokenizer files it lacks.
  DAGRAD_ASSIGN_OR_RETURN(auto gen, models::Generator::Load(path, std::move(device),
                                                            {.attention = attention}));
  DAGRAD_ASSIGN_OR_RETURN(const std::string tokenizer, TokenizerToRead(path));
  DAGRAD_ASSIGN_OR_RETURN(const models::TextCodec codec, CodecFor(path, tokenizer));
  DAGRAD_RETURN_IF_ERROR(CheckCodecFitsModel(path, tokenizer, codec, gen->model().vocab()));
  // The prompt, then each token's bytes as it is drawn (TerminalStream).
  TerminalStream out(stdout);
  absl::Status undecodable;
  int64_t drawn = 0;
  models::GenerateOptions options{
      .tokens = absl::GetFlag(FLAGS_tokens),
      .sampling = {.temperature = absl::GetFlag(FLAGS_temperature),
                   .top_k = absl::GetFlag(FLAGS_top_k),
                   .top_p = absl::GetFlag(FLAGS_top_p),
                   .seed = absl::GetFlag(FLAGS_seed)},
      .kv_cache = absl::GetFlag(FLAGS_kv_cache),
      .on_token = [&](int64_t token) {
        ++drawn;
        absl::StatusOr<std::string> bytes = codec.decode({token});
        if (bytes.ok()) out.Write(*bytes);
        if (!bytes.ok() && undecodable.ok()) {
          // A model with more ids than its tokenizer drew one the tokenizer lacks.
          undecodable = absl::InvalidArgumentError(absl::StrCat(
              "generated token ", drawn, " is id ", token, ", which the tokenizer of ",
              tokenizer.empty() ? path : tokenizer, " does not have: the model has ",
              gen->model().vocab(), " ids, more than the tokenizer"));
        }
      }};
  DAGRAD_RETURN_IF_ERROR(models::CheckGenerateOptions(options));  // before any output
  out.Write(prompt);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<int64_t>> more = gen->Generate(codec.encode(prompt), options);
  out.Flush();
  DAGRAD_RETURN_IF_ERROR(more.status());
  DAGRAD_RETURN_IF_ERROR(undecodable);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (absl::GetFlag(FLAGS_timing)) {
    std::cerr << absl::StrFormat("%d tokens in %.3f s: %.1f tokens/s (kv_cache %s)\n", more->size(),
                                 took.count(), more->size() / std::max(took.count(), 1e-9),
                                 options.kv_cache ? "on" : "off");
  }
  return absl::OkStatus();
}

int RunGenerate() { return ExitCode(GenerateCommand(), Generate()); }

}  // namespace

Command GenerateCommand() {
  return {"generate",
          "continue a prompt with a GPT checkpoint or a Hugging Face GPT-2 directory (prompt + "
          "continuation on stdout)",
          {"checkpoint", "model", "tokenizer", "prompt", "prompt_file", "tokens", "temperature", "top_k",
           "top_p", "seed", "kv_cache", "timing", "threads", "wait_policy", "device", "attention"},
          RunGenerate};
}

}  // namespace dagrad::cli
