// libFuzzer target: GPT-2's tokenizer files and text codec
// (models/gpt/tokenizer.h, tokenizer_files.h, pretokenizer.h) on arbitrary
// bytes. The input is three parts separated by NUL bytes,
//
//   VOCAB_JSON \0 MERGES_TXT \0 TEXT
//
// the text being everything after the second NUL (NULs included); a part
// with no NUL before it is empty. An empty VOCAB_JSON stands for one made
// here: "<|endoftext|>", the 256 byte symbols, then the concatenation of
// each line's two symbols when it is made of byte symbols, so that the
// fuzzer spends its mutations on merges and texts rather than on keeping a
// 2 KB JSON object whole. Traps when broken:
//   - a refused file is not InvalidArgument naming that file;
//   - Gpt2PreTokenize's words are empty or do not concatenate to the text;
//   - an id is outside the vocabulary, or Decode(Encode(text)) or
//     Decode(EncodeOrdinary(text)) is not the text (a loaded vocabulary has
//     every byte's symbol, so any bytes come back);
//   - EncodeOrdinary differs from encoder.py's algorithm written plainly
//     (each round merges every occurrence of the pair of lowest rank, left
//     to right), or Encode from it with "<|endoftext|>" the special token.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/io/utf8.h"
#include "models/gpt/pretokenizer.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt/tokenizer_files.h"

namespace {

using namespace dagrad::models;

constexpr char kVocabName[] = "fuzz/vocab.json";
constexpr char kMergesName[] = "fuzz/merges.txt";

// Parts splits the input at its first two NULs: vocab.json, merges.txt, text.
std::vector<absl::string_view> Parts(absl::string_view in) {
  std::vector<absl::string_view> parts;
  for (int i = 0; i < 2; ++i) {
    const size_t nul = in.find('\0');
    parts.push_back(in.substr(0, nul));
    in = nul == absl::string_view::npos ? absl::string_view() : in.substr(nul + 1);
  }
  parts.push_back(in);
  return parts;
}

// IsByteSymbol: whether the code point `c` stands for a byte.
bool IsByteSymbol(int32_t c) {
  return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0x143);
}

bool AllByteSymbols(absl::string_view token) {
  size_t pos = 0;
  while (pos < token.size()) {
    if (!IsByteSymbol(dagrad::NextCodePoint(token, pos))) return false;
  }
  return true;
}

// MadeVocab is the vocab.json that an empty first part stands for.
std::string MadeVocab(absl::string_view merges_text) {
  nlohmann::json vocab = nlohmann::json::object();
  const auto add = [&](const std::string& token) {
    const size_t id = vocab.size();
    if (!vocab.contains(token)) vocab[token] = id;
  };
  add(Gpt2Tokenizer::kEndOfText);
  for (int b = 0; b < 256; ++b) {
    const int32_t c = Gpt2ByteSymbol(static_cast<uint8_t>(b));  // below 0x800: two bytes at most
    std::string symbol(1, static_cast<char>(c < 0x80 ? c : 0xC0 | (c >> 6)));
    if (c >= 0x80) symbol += static_cast<char>(0x80 | (c & 0x3F));
    add(symbol);
  }
  for (absl::string_view line : absl::StrSplit(merges_text, '\n')) {
    absl::ConsumeSuffix(&line, "\r");
    const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
    const std::string token = parts.size() == 2 ? absl::StrCat(parts[0], parts[1]) : "";
    if (!token.empty() && AllByteSymbols(token)) add(token);
  }
  return vocab.dump();
}

// The files as encoder.py holds them: each byte's id, and each merge's rank
// and result by its pair.
struct Reference {
  Gpt2Vocabulary vocab;
  absl::flat_hash_map<std::pair<int32_t, int32_t>, std::pair<size_t, int32_t>> merges;
};

// ReferenceBpe is encoder.py's bpe() on ids: while some adjacent pair has a
// rank, replace every occurrence of the lowest-ranked one, left to right.
std::vector<int64_t> ReferenceBpe(const Reference& r, absl::string_view word) {
  std::vector<int64_t> syms;
  for (const char c : word) syms.push_back(r.vocab.byte_ids[static_cast<uint8_t>(c)]);
  for (;;) {
    const std::pair<size_t, int32_t>* best = nullptr;
    std::pair<int32_t, int32_t> pair;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const auto it = r.merges.find(std::pair<int32_t, int32_t>(syms[i], syms[i + 1]));
      if (it != r.merges.end() && (best == nullptr || it->second.first < best->first)) {
        best = &it->second;
        pair = it->first;
      }
    }
    if (best == nullptr) return syms;
    std::vector<int64_t> merged;
    for (size_t i = 0; i < syms.size(); ++i) {
      const bool hit = i + 1 < syms.size() && syms[i] == pair.first && syms[i + 1] == pair.second;
      merged.push_back(hit ? best->second : syms[i]);
      i += hit;
    }
    syms = std::move(merged);
  }
}

std::vector<int64_t> ReferenceOrdinary(const Reference& r, absl::string_view text) {
  std::vector<int64_t> ids;
  for (const absl::string_view word : Gpt2PreTokenize(text)) {
    const std::vector<int64_t> word_ids = ReferenceBpe(r, word);
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  }
  return ids;
}

std::vector<int64_t> ReferenceEncode(const Reference& r, absl::string_view text) {
  if (r.vocab.end_of_text < 0) return ReferenceOrdinary(r, text);
  std::vector<int64_t> ids;
  bool first = true;
  for (const absl::string_view piece : absl::StrSplit(text, Gpt2Tokenizer::kEndOfText)) {
    if (!first) ids.push_back(r.vocab.end_of_text);
    first = false;
    const std::vector<int64_t> piece_ids = ReferenceOrdinary(r, piece);
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  }
  return ids;
}

Reference ReadReference(absl::string_view vocab_json, absl::string_view merges_text) {
  Reference r;
  absl::StatusOr<Gpt2Vocabulary> vocab = ReadGpt2Vocabulary(kVocabName, vocab_json);
  if (!vocab.ok()) std::abort();  // the tokenizer read it
  r.vocab = *std::move(vocab);
  absl::StatusOr<std::vector<Gpt2Merge>> merges = ReadGpt2Merges(kMergesName, merges_text, r.vocab);
  if (!merges.ok()) std::abort();
  for (size_t rank = 0; rank < merges->size(); ++rank) {
    const Gpt2Merge& m = (*merges)[rank];
    r.merges[{m.left, m.right}] = {rank, m.result};
  }
  return r;
}

void CheckPreTokenize(absl::string_view text) {
  std::string joined;
  for (const absl::string_view word : Gpt2PreTokenize(text)) {
    if (word.empty()) std::abort();
    joined.append(word.data(), word.size());
  }
  if (joined != text) std::abort();
}

void CheckRoundTrip(const Gpt2Tokenizer& t, const std::vector<int64_t>& ids,
                    absl::string_view text) {
  for (const int64_t id : ids) {
    if (id < 0 || id >= t.vocab_size()) std::abort();
  }
  absl::StatusOr<std::string> back = t.Decode(ids);
  if (!back.ok() || *back != text) std::abort();
}

void CheckRefusal(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) std::abort();
  if (!absl::StartsWith(status.message(), kVocabName) &&
      !absl::StartsWith(status.message(), kMergesName)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<absl::string_view> parts =
      Parts(absl::string_view(reinterpret_cast<const char*>(data), size));
  const std::string vocab_json = parts[0].empty() ? MadeVocab(parts[1]) : std::string(parts[0]);
  const absl::string_view merges_text = parts[1], text = parts[2];
  CheckPreTokenize(text);
  absl::StatusOr<Gpt2Tokenizer> t =
      Gpt2Tokenizer::Parse(vocab_json, merges_text, kVocabName, kMergesName);
  if (!t.ok()) {
    CheckRefusal(t.status());
    return 0;
  }
  const std::vector<int64_t> ordinary = t->EncodeOrdinary(text);
  const std::vector<int64_t> special = t->Encode(text);
  CheckRoundTrip(*t, ordinary, text);
  CheckRoundTrip(*t, special, text);
  const Reference reference = ReadReference(vocab_json, merges_text);
  if (ordinary != ReferenceOrdinary(reference, text)) std::abort();
  if (special != ReferenceEncode(reference, text)) std::abort();
  return 0;
}
