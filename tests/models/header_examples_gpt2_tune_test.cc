// The examples of models/gpt2/hf_export.h and fine_tune.h, and of
// TokenTextData (models/gpt/text_task.h), line for line, run
// (tests/support/header_examples.h).

#include <filesystem>
#include <string>

#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/fit.h"
#include "models/gpt/text_task.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt2/fine_tune.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/gpt2/hf_export.h"
#include "tests/support/header_examples.h"

namespace dagrad::models {
namespace {

// CopyTinyGpt2 copies the tiny Hugging Face GPT-2 of tests/data to "gpt2",
// and writes "corpus.txt", a text of a few thousand bytes.
absl::Status CopyTinyGpt2AndCorpus() {
  std::error_code error;
  std::filesystem::copy(std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny", "gpt2", error);
  if (error) return absl::InternalError(error.message());
  std::string text;
  for (int i = 0; i < 40; ++i) text += "It was the best of times, it was the worst of times.\n";
  return WriteFileAtomically("corpus.txt", text);
}

HEADER_EXAMPLE(ModelsGpt2WriteHfGpt2) {
  DAGRAD_RETURN_IF_ERROR(CopyTinyGpt2AndCorpus());
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2("gpt2"));
  std::filesystem::create_directories("runs/x");
  DAGRAD_RETURN_IF_ERROR(WriteSafetensors("runs/x/model.safetensors", files.weights));
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile m, ReadCheckpoint("runs/x/model.safetensors"));
  DAGRAD_RETURN_IF_ERROR(WriteHfGpt2(m, "runs/x/model.safetensors", "gpt2", "gpt2-tuned"));
  return ReadHfGpt2("gpt2-tuned").status();
}

HEADER_EXAMPLE(ModelsGpt2FineTuner) {
  DAGRAD_RETURN_IF_ERROR(CopyTinyGpt2AndCorpus());
  DAGRAD_ASSIGN_OR_RETURN(auto trainer, CreateGpt2FineTuner("gpt2", "corpus.txt", 32,
                                                            {.run = {.batch = 4, .steps = 20}}));
  DAGRAD_ASSIGN_OR_RETURN(FitResult fit, Fit(*trainer, {.dir = "runs/tuned"}));
  // then WriteHfGpt2 of runs/tuned/model.safetensors
  return fit.end == FitEnd::kComplete ? absl::OkStatus() : absl::InternalError("not complete");
}

HEADER_EXAMPLE(ModelsTokenTextData) {
  DAGRAD_RETURN_IF_ERROR(CopyTinyGpt2AndCorpus());
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer tokenizer, Gpt2Tokenizer::LoadDirectory("gpt2"));
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile("corpus.txt"));
  DAGRAD_ASSIGN_OR_RETURN(TokenTextData data,
                          TokenTextData::FromTokens(tokenizer.Encode(text), 32, "corpus.txt"));
  DAGRAD_ASSIGN_OR_RETURN(TokenBatch b, data.TrainBatch(/*seed=*/0, /*index=*/1, 8));
  return b.tokens.shape() == Shape({8, 32}) ? absl::OkStatus() : absl::InternalError("shape");
}

}  // namespace
}  // namespace dagrad::models
