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
#include "absl/strings/str_join.h"
#include "models/gpt/tokenizer.h"
#include "engine/status_macros.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"

ABSL_DECLARE_FLAG(std::string, model);  // dot_command.cc
ABSL_FLAG(std::string, text, "", "the text to tokenize");

namespace dagrad::cli {
namespace {

absl::Status Tokenize() {
  const std::string dir = absl::GetFlag(FLAGS_model);
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        "--model=DIR is required: a directory with vocab.json and merges.txt");
  }
  // --text="" is text (no tokens), not a missing flag.
  if (!FlagGiven("text")) return absl::InvalidArgumentError("--text is required");
  DAGRAD_ASSIGN_OR_RETURN(const models::Gpt2Tokenizer tokenizer,
                          models::Gpt2Tokenizer::LoadDirectory(dir));
  std::cout << absl::StrJoin(tokenizer.Encode(absl::GetFlag(FLAGS_text)), " ") << "\n";
  return absl::OkStatus();
}

int RunTokenize() { return ExitCode(TokenizeCommand(), Tokenize()); }

}  // namespace

Command TokenizeCommand() {
  return {"tokenize",
          "print the ids of --text under a GPT-2 tokenizer (--model=DIR: vocab.json, merges.txt)",
          {"model", "text"},
          RunTokenize};
}

}  // namespace dagrad::cli
