// models/text_codec.h
//
// TextCodec: text into a model's tokens and tokens back into bytes, for the
// model at a path as ReadModelFile reads it (models/language_model.h): a
// Hugging Face GPT-2 directory through its own tokenizer (vocab.json,
// merges.txt: models/gpt/tokenizer.h), any other model file one byte a
// token (the byte-level GPT of `dagrad train --task=text`).
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(models::TextCodec codec, models::TextCodecFor("models/gpt2"));
//   std::vector<int64_t> ids = codec.encode("Hello world");
//   DAGRAD_ASSIGN_OR_RETURN(std::string text, codec.decode(ids));

#ifndef DAGRAD_MODELS_TEXT_CODEC_H_
#define DAGRAD_MODELS_TEXT_CODEC_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dagrad::models {

struct TextCodec {
  std::function<std::vector<int64_t>(absl::string_view text)> encode;
  // decode: InvalidArgument naming an id the tokenizer has no bytes for.
  std::function<absl::StatusOr<std::string>(absl::Span<const int64_t> ids)> decode;
};

// TextCodecFor returns the codec of the model at `path`: its tokenizer's
// errors (a missing or broken vocab.json or merges.txt, naming the file)
// for a directory.
absl::StatusOr<TextCodec> TextCodecFor(const std::string& path);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TEXT_CODEC_H_
