// models/gpt/tokenizer_files.h
//
// The readers of GPT-2's tokenizer files, as Hugging Face ships them, for
// Gpt2Tokenizer (tokenizer.h). vocab.json is one JSON object, token -> id,
// each token written in byte symbols (Gpt2ByteSymbol), the ids 0..N-1, each
// once. merges.txt has one merge a line, "LEFT RIGHT" in byte symbols, by
// rank (the first is rank 0); a first line "#version..." is a comment, and
// the file may end with a newline or not.
//
// Gpt2ByteSymbol is encoder.py's bytes_to_unicode: bytes '!'..'~',
// 0xA1..0xAC and 0xAE..0xFF stand for themselves, the other 68 for U+0100
// on, in byte order (' ' is U+0120 'Ġ', '\n' U+010A 'Ċ').
//
//   Gpt2ByteSymbol(' ');  // 0x120

#ifndef DAGRAD_MODELS_GPT_TOKENIZER_FILES_H_
#define DAGRAD_MODELS_GPT_TOKENIZER_FILES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dagrad::models {

// Gpt2ByteSymbol returns the code point that stands for byte `b`.
int32_t Gpt2ByteSymbol(uint8_t b);

// Gpt2Vocabulary is vocab.json read.
struct Gpt2Vocabulary {
  std::vector<std::string> token_bytes;             // by id: the bytes it stands for
  absl::flat_hash_map<std::string, int32_t> ids;    // by token as written (UTF-8)
  std::array<int32_t, 256> byte_ids{};              // the id of each byte's symbol
  int64_t end_of_text = -1;                         // "<|endoftext|>", or -1
};

// ReadGpt2Vocabulary reads `json`, the contents of the file `path`.
// InvalidArgument naming `path` and: where the JSON is not JSON (line and
// column), a value that is not an integer, an id outside 0..N-1 or given
// twice, a token given twice, a token with a character that is no byte's
// symbol, a byte with no token of its own.
absl::StatusOr<Gpt2Vocabulary> ReadGpt2Vocabulary(const std::string& path,
                                                  absl::string_view json);

// Gpt2Merge is one line of merges.txt: the ids of its two tokens and of
// the token they make.
struct Gpt2Merge {
  int32_t left, right, result;
};

// ReadGpt2Merges reads `text`, the contents of the file `path`, against
// `vocab`: the merges by rank. Lines end in "\n" or "\r\n"; a first line
// starting "#version" is skipped. InvalidArgument naming `path`, the line and:
// a line that is not two symbols separated by one space, a symbol or the
// pair's concatenation not in the vocabulary, a pair given before.
absl::StatusOr<std::vector<Gpt2Merge>> ReadGpt2Merges(const std::string& path,
                                                      absl::string_view text,
                                                      const Gpt2Vocabulary& vocab);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_TOKENIZER_FILES_H_
