#include "models/gpt2/fine_tune.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/gpt/text_task.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"

namespace dagrad::models {
namespace {

// EncodeText reads `text_path` and splits its tokens (the directory's
// tokenizer) into windows of seq_len.
absl::StatusOr<TokenTextData> EncodeText(const std::string& hf_dir, const Gpt2Config& model,
                                         const std::string& text_path, int64_t seq_len) {
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer tokenizer, Gpt2Tokenizer::LoadDirectory(hf_dir));
  if (tokenizer.vocab_size() > model.vocab) {
    return absl::InvalidArgumentError(absl::StrCat(
        hf_dir, "/vocab.json has ", tokenizer.vocab_size(),
        " tokens, more than config.json's field 'vocab_size' ", model.vocab));
  }
  if (seq_len < 1 || seq_len > model.positions) {
    return absl::InvalidArgumentError(absl::StrCat("seq_len must be in [1, ", model.positions,
                                                   "] (config.json's field 'n_positions' of ",
                                                   hf_dir, "), got ", seq_len));
  }
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile(text_path));
  return TokenTextData::FromTokens(tokenizer.Encode(text), seq_len, text_path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LmTrainer>> CreateGpt2FineTuner(
    const std::string& hf_dir, const std::string& text_path, int64_t seq_len,
    LmTrainConfig config, std::unique_ptr<Device> device,
    const DataParallelOptions& data_parallel) {
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2(hf_dir));
  DAGRAD_ASSIGN_OR_RETURN(TokenTextData text, EncodeText(hf_dir, files.config, text_path, seq_len));
  LmData lm = TokenTextData::ToLmData(std::make_shared<const TokenTextData>(std::move(text)),
                                      config.run.seed);
  config.initial = std::make_shared<const SafetensorsFile>(std::move(files.weights));
  config.initial_source = hf_dir;
  config.metadata["task"] = "gpt2-text";
  config.metadata["init"] = hf_dir;
  config.metadata["data"] = text_path;
  config.metadata["seq_len"] = absl::StrCat(seq_len);
  return LmTrainer::Create(Gpt2::Builder(files.config), std::move(lm), config, std::move(device),
                           data_parallel);
}

}  // namespace dagrad::models
