#include "models/gpt2/fine_tune.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/gpt/text_task.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"
#include "ops/dropout.h"

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

// SetDropouts sets all three of the model's dropouts to p.
absl::Status SetDropouts(double p, Gpt2Config& model) {
  if (absl::Status valid = ValidateDropout(p); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("fine-tuning: ", valid.message()));
  }
  model.attn_pdrop = model.embd_pdrop = model.resid_pdrop = p;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LmTrainer>> CreateGpt2FineTuner(
    const Gpt2FineTune& tune, LmTrainConfig config, std::unique_ptr<Device> device,
    const DataParallelOptions& data_parallel) {
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2(tune.hf_dir));
  files.config.attention = tune.attention;
  if (tune.dropout.has_value()) {
    DAGRAD_RETURN_IF_ERROR(SetDropouts(*tune.dropout, files.config));
  }
  DAGRAD_ASSIGN_OR_RETURN(TokenTextData text, EncodeText(tune.hf_dir, files.config, tune.text_path,
                                                         tune.seq_len));
  if (Communicator* comm = data_parallel.communicator.get()) {
    DAGRAD_RETURN_IF_ERROR(text.SameOnEveryRank(*comm, tune.text_path));
  }
  config.metadata[kDataChecksumKey] = text.Checksum();
  LmData lm = TokenTextData::ToLmData(std::make_shared<const TokenTextData>(std::move(text)),
                                      config.run.seed);
  config.initial = std::make_shared<const SafetensorsFile>(std::move(files.weights));
  config.initial_source = tune.hf_dir;
  config.tokenizer = std::filesystem::absolute(tune.hf_dir).lexically_normal().string();
  config.metadata["task"] = "gpt2-text";
  config.metadata["init"] = tune.hf_dir;
  config.metadata["data"] = tune.text_path;
  config.metadata["seq_len"] = absl::StrCat(tune.seq_len);
  return LmTrainer::Create(Gpt2::Builder(files.config), std::move(lm), config, std::move(device),
                           data_parallel);
}

}  // namespace dagrad::models
