// models/text_codec.h
//
// TextCodec: text into a model's tokens and tokens back into bytes, for the
// model at a path as ReadModelFile reads it (models/language_model.h): a
// Hugging Face GPT-2 directory through its own tokenizer (vocab.json,
// merges.txt: models/gpt/tokenizer.h), a model file through the tokenizer
// directory given, or else one byte a token (the byte-level GPT of
// `dagrad train --task=text`). A fine-tuned GPT-2's file records its
// tokenizer's directory: RecordedTokenizerDir.
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
  int64_t vocab = 256;  // the tokenizer's ids are 0..vocab-1 (bytes: 256)
};

// TextCodecFor returns the codec of the model at `path`: the tokenizer in
// `tokenizer_dir` when it is given, else a directory's own, else bytes. The
// tokenizer's errors (a missing or broken vocab.json or merges.txt, naming
// the file).
absl::StatusOr<TextCodec> TextCodecFor(const std::string& path,
                                       const std::string& tokenizer_dir = "");

// The model-file metadata key of the tokenizer directory whose ids the model
// reads (an absolute path; absent for a byte-level model).
inline constexpr char kTokenizerKey[] = "tokenizer";

// RecordedTokenizerDir returns the tokenizer directory that the model file
// at `path` records: its kTokenizerKey, or else the --init recorded by the
// training checkpoint beside it (checkpoint.safetensors: a run written
// before model files recorded it; relative to where that run started). It
// reads the files' headers only (ReadSafetensorsMetadata).
//
// Errors: NotFound when neither records one; the model file's header
// errors.
//
//   // setup: SavedGpt
//   absl::StatusOr<std::string> dir = models::RecordedTokenizerDir("run/model.safetensors");
//   bool bytes = absl::IsNotFound(dir.status());   // a byte-level GPT's file: true
absl::StatusOr<std::string> RecordedTokenizerDir(const std::string& path);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TEXT_CODEC_H_
