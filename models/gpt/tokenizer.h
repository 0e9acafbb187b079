// models/gpt/tokenizer.h
//
// Gpt2Tokenizer: GPT-2's byte-level BPE, read from the `vocab.json` and
// `merges.txt` that Hugging Face ships with a GPT-2 model, encoding as
// openai/gpt-2's src/encoder.py does:
//   1. the text is split into words by GPT-2's pattern (pretokenizer.h);
//   2. each byte of a word is its byte symbol (encoder.py's bytes_to_unicode:
//      the printable bytes stand for themselves, the others for U+0100 on);
//   3. within a word, the adjacent pair of lowest rank in merges.txt is merged,
//      every occurrence of it left to right, until no pair has a rank;
//   4. the symbols' ids come from vocab.json.
// Decoding concatenates the tokens' bytes: any byte string, valid UTF-8 or
// not, comes back from Decode(Encode(bytes)) exactly as it went in.
//
// `<|endoftext|>`: Encode takes the text "<|endoftext|>" as that special
// token (when the vocabulary has it), as Hugging Face's GPT2Tokenizer and
// tiktoken (with the special token allowed) do; encoder.py has no special
// tokens and splits it like any text ("<|", "endoftext", "|>"), which is
// what EncodeOrdinary does.
//
// A loaded tokenizer is immutable: Encode keeps its cache of merged words
// for the one call, so threads may share one tokenizer.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer tokenizer, Gpt2Tokenizer::LoadDirectory(dir));
//   std::vector<int64_t> ids = tokenizer.Encode("Hello world<|endoftext|>");
//   DAGRAD_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(ids));

#ifndef DAGRAD_MODELS_GPT_TOKENIZER_H_
#define DAGRAD_MODELS_GPT_TOKENIZER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dagrad::models {

class Gpt2Tokenizer {
 public:
  // kEndOfText is GPT-2's one special token.
  static constexpr char kEndOfText[] = "<|endoftext|>";

  // Load reads the vocabulary and the merges (tokenizer_files.h says what
  // each file must be): InvalidArgument naming the file and the line or the
  // token that is wrong, or ReadFile's error for a file that cannot be read.
  static absl::StatusOr<Gpt2Tokenizer> Load(const std::string& vocab_path,
                                            const std::string& merges_path);

  // Parse is Load of the files' contents, `vocab_json` and `merges_text`,
  // which messages name `vocab_name` and `merges_name`.
  //   // setup: Gpt2Files
  //   DAGRAD_ASSIGN_OR_RETURN(std::string vocab, ReadFile("gpt2/vocab.json"));
  //   DAGRAD_ASSIGN_OR_RETURN(std::string merges, ReadFile("gpt2/merges.txt"));
  //   DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer t, Gpt2Tokenizer::Parse(vocab, merges, "v", "m"));
  static absl::StatusOr<Gpt2Tokenizer> Parse(absl::string_view vocab_json,
                                             absl::string_view merges_text,
                                             const std::string& vocab_name,
                                             const std::string& merges_name);

  // LoadDirectory is Load(dir/vocab.json, dir/merges.txt).
  static absl::StatusOr<Gpt2Tokenizer> LoadDirectory(const std::string& dir);

  // Encode returns the ids of `text` (any bytes), with each "<|endoftext|>"
  // in it the special token's id when the vocabulary has that token.
  std::vector<int64_t> Encode(absl::string_view text) const;

  // EncodeOrdinary returns the ids of `text` with no special tokens: exactly
  // what encoder.py gives.
  std::vector<int64_t> EncodeOrdinary(absl::string_view text) const;

  // Decode returns the bytes of the tokens `ids`, concatenated: raw bytes,
  // not necessarily UTF-8. InvalidArgument naming the position of an id
  // outside 0..vocab_size()-1.
  absl::StatusOr<std::string> Decode(absl::Span<const int64_t> ids) const;

  // vocab_size returns N: the ids are 0..N-1.
  int64_t vocab_size() const { return static_cast<int64_t>(token_bytes_.size()); }

  // end_of_text returns the id of "<|endoftext|>", or -1 when the
  // vocabulary has no such token.
  int64_t end_of_text() const { return end_of_text_; }

 private:
  // A merge: its rank (its line's order in merges.txt) and the id of the
  // token it makes.
  struct Merge {
    int32_t rank;
    int32_t id;
  };

  Gpt2Tokenizer() = default;
  // Bpe appends the ids of one word.
  void Bpe(absl::string_view word, std::vector<int32_t>& out) const;
  void EncodeWords(absl::string_view text, std::vector<int64_t>& out) const;

  std::vector<std::string> token_bytes_;  // by id
  std::array<int32_t, 256> byte_ids_{};   // the id of each byte's symbol
  absl::flat_hash_map<uint64_t, Merge> merges_;  // by (left id << 32 | right id)
  int64_t end_of_text_ = -1;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_TOKENIZER_H_
