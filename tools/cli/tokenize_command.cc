// `dagrad tokenize`: the ids GPT-2's tokenizer (models/gpt/tokenizer.h)
// gives a text, with the vocab.json and merges.txt of a Hugging Face GPT-2
// directory, on one line separated by spaces. "<|endoftext|>" in the text is
// the special token.
//
//   dagrad tokenize --model=gpt2 --text="Hello world"

#include <iostream>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_join.h"
#include "models/gpt/tokenizer.h"
#include "tools/cli/command.h"

ABSL_DECLARE_FLAG(std::string, model);  // dot_command.cc
ABSL_FLAG(std::string, text, "", "the text to tokenize");

namespace dagrad::cli {
namespace {

int RunTokenize() {
  const Command cmd = TokenizeCommand();
  const std::string dir = absl::GetFlag(FLAGS_model);
  if (dir == absl::GetFlagReflectionHandle(FLAGS_model).DefaultValue()) {
    return UsageError(cmd, "--model=DIR is required: a directory with vocab.json and merges.txt");
  }
  const std::string text = absl::GetFlag(FLAGS_text);
  if (text.empty()) return UsageError(cmd, "--text is required (and not empty)");
  absl::StatusOr<models::Gpt2Tokenizer> tokenizer = models::Gpt2Tokenizer::LoadDirectory(dir);
  if (!tokenizer.ok()) return Failure(cmd, tokenizer.status());
  std::cout << absl::StrJoin(tokenizer->Encode(text), " ") << "\n";
  return kExitOk;
}

}  // namespace

Command TokenizeCommand() {
  return {"tokenize",
          "print the ids of --text under a GPT-2 tokenizer (--model=DIR: vocab.json, merges.txt)",
          {"model", "text"},
          RunTokenize};
}

}  // namespace dagrad::cli
