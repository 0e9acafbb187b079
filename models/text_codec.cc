#include "models/text_codec.h"

#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/generator.h"
#include "models/gpt/tokenizer.h"

namespace dagrad::models {

absl::StatusOr<TextCodec> TextCodecFor(const std::string& path,
                                       const std::string& tokenizer_dir) {
  if (tokenizer_dir.empty() && !IsDirectory(path)) {
    return TextCodec{BytesToTokens, [](absl::Span<const int64_t> ids) -> absl::StatusOr<std::string> {
                       for (int64_t id : ids) {
                         if (id < 0 || id > 255) {
                           return absl::InvalidArgumentError(absl::StrCat(
                               "token id ", id, " is not a byte, as a byte-level model's are"));
                         }
                       }
                       return TokensToBytes(ids);
                     },
                     256};
  }
  DAGRAD_ASSIGN_OR_RETURN(
      Gpt2Tokenizer loaded,
      Gpt2Tokenizer::LoadDirectory(tokenizer_dir.empty() ? path : tokenizer_dir));
  auto tokenizer = std::make_shared<const Gpt2Tokenizer>(std::move(loaded));
  return TextCodec{[tokenizer](absl::string_view text) { return tokenizer->Encode(text); },
                   [tokenizer](absl::Span<const int64_t> ids) { return tokenizer->Decode(ids); },
                   tokenizer->vocab_size()};
}

absl::StatusOr<std::string> RecordedTokenizerDir(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(const auto metadata, ReadSafetensorsMetadata(path));
  if (auto it = metadata.find(kTokenizerKey); it != metadata.end()) return it->second;
  const std::string run =
      (std::filesystem::path(path).parent_path() / "checkpoint.safetensors").string();
  const absl::StatusOr<std::map<std::string, std::string>> checkpoint =
      ReadSafetensorsMetadata(run);
  if (checkpoint.ok() && checkpoint->contains("init")) return checkpoint->at("init");
  return absl::NotFoundError(absl::StrCat(path, " records no tokenizer (metadata '", kTokenizerKey,
                                          "'), nor does ", run, " (its --init)"));
}

}  // namespace dagrad::models
