#include "models/text_codec.h"

#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "models/generator.h"
#include "models/gpt/tokenizer.h"

namespace dagrad::models {

absl::StatusOr<TextCodec> TextCodecFor(const std::string& path) {
  if (!std::filesystem::is_directory(path)) {
    return TextCodec{BytesToTokens, [](absl::Span<const int64_t> ids) -> absl::StatusOr<std::string> {
                       for (int64_t id : ids) {
                         if (id < 0 || id > 255) {
                           return absl::InvalidArgumentError(absl::StrCat(
                               "token id ", id, " is not a byte, as a byte-level model's are"));
                         }
                       }
                       return TokensToBytes(ids);
                     }};
  }
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer loaded, Gpt2Tokenizer::LoadDirectory(path));
  auto tokenizer = std::make_shared<const Gpt2Tokenizer>(std::move(loaded));
  return TextCodec{[tokenizer](absl::string_view text) { return tokenizer->Encode(text); },
                   [tokenizer](absl::Span<const int64_t> ids) { return tokenizer->Decode(ids); }};
}

}  // namespace dagrad::models
