#include "models/gpt/tokenizer_files.h"

#include <cstddef>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"

namespace dagrad::models {
namespace {

using json = nlohmann::json;

// VocabSax reads vocab.json as the parser goes, keeping only a flat object
// of token -> integer: a nested or mistyped value stops the parse at once
// (no document of a hostile file is built), with `error` set.
class VocabSax : public nlohmann::json_sax<json> {
 public:
  std::vector<std::pair<std::string, int64_t>> entries;
  std::string error;

  bool null() override { return Wrong("null"); }
  bool boolean(bool) override { return Wrong("a boolean"); }
  bool number_integer(number_integer_t v) override { return Id(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return v > static_cast<number_unsigned_t>(INT64_MAX) ? Wrong("a huge integer") : Id(v);
  }
  bool number_float(number_float_t, const string_t&) override { return Wrong("a fraction"); }
  bool string(string_t&) override { return Wrong("a string"); }
  bool binary(binary_t&) override { return Wrong("binary"); }
  bool start_object(std::size_t) override { return depth_++ == 0 || Wrong("an object"); }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return Wrong("an array"); }
  bool end_array() override { return true; }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error = absl::StrCat("not JSON: ", JsonErrorText(e.what()));
    return false;
  }

 private:
  bool Id(int64_t id) {
    if (depth_ != 1) return Wrong("an integer");
    entries.emplace_back(std::move(key_), id);
    return true;
  }
  bool Wrong(const char* what) {
    error = depth_ == 0 ? absl::StrCat("is ", what, ", not an object of token -> id")
                        : absl::StrCat("the id of token ", QuotedText(key_), " is ", what,
                                       ", not an integer");
    return false;
  }

  int depth_ = 0;
  std::string key_;
};

// ByteOfSymbol maps a code point below 0x144 back to its byte (-1: none).
std::array<int16_t, 0x144> ByteOfSymbol() {
  std::array<int16_t, 0x144> bytes;
  bytes.fill(-1);
  for (int b = 0; b < 256; ++b) bytes[Gpt2ByteSymbol(static_cast<uint8_t>(b))] = b;
  return bytes;
}

// TokenBytes returns the bytes `token` stands for, or an error naming the
// character that is no byte's symbol.
absl::StatusOr<std::string> TokenBytes(absl::string_view token) {
  static const std::array<int16_t, 0x144> byte_of = ByteOfSymbol();
  std::string bytes;
  size_t pos = 0;
  while (pos < token.size()) {
    const int32_t c = NextCodePoint(token, pos);
    if (c < 0 || c >= static_cast<int32_t>(byte_of.size()) || byte_of[c] < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the token %s has the character U+%04X, which stands for no byte", QuotedText(token), c));
    }
    bytes += static_cast<char>(byte_of[c]);
  }
  return bytes;
}

std::string SymbolOf(uint8_t b) {
  std::string s;
  const int32_t c = Gpt2ByteSymbol(b);
  s += static_cast<char>(c < 0x80 ? c : 0xC0 | (c >> 6));
  if (c >= 0x80) s += static_cast<char>(0x80 | (c & 0x3F));
  return s;
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseVocab(absl::string_view text) {
  VocabSax sax;
  // A parse error's message names its line and column.
  if (!json::sax_parse(text.begin(), text.end(), &sax)) {
    return absl::InvalidArgumentError(sax.error);
  }
  return std::move(sax.entries);
}

// IdOutOfRange says that `token`'s id is outside [0, n) for the n
// `entries`; for one too large, also the first id below n that no token
// has: a vocabulary with a gap (an entry removed) is refused at its
// largest id, but the fault is the gap.
absl::Status IdOutOfRange(const std::vector<std::pair<std::string, int64_t>>& entries,
                          const std::string& token, int64_t id) {
  const int64_t n = static_cast<int64_t>(entries.size());
  std::string gap;
  if (id >= n) {
    std::vector<bool> has(n, false);
    for (const auto& [other, i] : entries) {
      if (i >= 0 && i < n) has[i] = true;
    }
    const auto missing = std::find(has.begin(), has.end(), false);
    if (missing != has.end()) gap = absl::StrCat(", and no token has id ", missing - has.begin());
  }
  return absl::InvalidArgumentError(absl::StrCat("the id of token ", QuotedText(token), " is ",
                                                 id, ": the ", n, " ids must be 0 to ", n - 1,
                                                 gap));
}

// FillVocabulary puts each token at its id, or says which id is wrong.
absl::Status FillVocabulary(std::vector<std::pair<std::string, int64_t>> entries,
                            Gpt2Vocabulary& vocab) {
  const int64_t n = static_cast<int64_t>(entries.size());
  vocab.token_bytes.assign(n, std::string());
  std::vector<bool> taken(n, false);
  for (auto& [token, id] : entries) {
    if (id < 0 || id >= n) return IdOutOfRange(entries, token, id);
    if (taken[id]) {
      return absl::InvalidArgumentError(
          absl::StrCat("the id ", id, " is given twice (again to token ", QuotedText(token), ")"));
    }
    taken[id] = true;
    if (vocab.ids.contains(token)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the token ", QuotedText(token), " is given twice"));
    }
    DAGRAD_ASSIGN_OR_RETURN(vocab.token_bytes[id], TokenBytes(token));
    vocab.ids.emplace(std::move(token), static_cast<int32_t>(id));
  }
  return absl::OkStatus();
}

absl::Status FindSymbols(Gpt2Vocabulary& vocab) {
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab.ids.find(SymbolOf(static_cast<uint8_t>(b)));
    if (it == vocab.ids.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "byte 0x%02x has no token (its symbol %s)", b, SymbolOf(static_cast<uint8_t>(b))));
    }
    vocab.byte_ids[b] = it->second;
  }
  if (const auto it = vocab.ids.find("<|endoftext|>"); it != vocab.ids.end()) {
    vocab.end_of_text = it->second;
  }
  return absl::OkStatus();
}

absl::Status InFile(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

// ReadMerge reads one line of merges.txt.
absl::StatusOr<Gpt2Merge> ReadMerge(absl::string_view line, const Gpt2Vocabulary& vocab) {
  const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        QuotedText(line), " is not two symbols separated by one space"));
  }
  Gpt2Merge merge;
  int32_t* ids[] = {&merge.left, &merge.right, &merge.result};
  const std::string names[] = {std::string(parts[0]), std::string(parts[1]),
                               absl::StrCat(parts[0], parts[1])};
  for (int i = 0; i < 3; ++i) {
    const auto it = vocab.ids.find(names[i]);
    if (it == vocab.ids.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(i < 2 ? "the symbol " : "the merged token ", QuotedText(names[i]),
                       " is not in the vocabulary"));
    }
    *ids[i] = it->second;
  }
  return merge;
}

}  // namespace

int32_t Gpt2ByteSymbol(uint8_t b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  if (printable) return b;
  // The n-th byte (from 0) that is not printable stands for 256 + n.
  int32_t n = 0;
  for (int c = 0; c < b; ++c) {
    n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
  }
  return 256 + n;
}

absl::StatusOr<Gpt2Vocabulary> ReadGpt2Vocabulary(const std::string& path,
                                                  absl::string_view json) {
  Gpt2Vocabulary vocab;
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> entries = ParseVocab(json);
  if (!entries.ok()) return InFile(path, entries.status());
  if (absl::Status st = FillVocabulary(std::move(*entries), vocab); !st.ok()) {
    return InFile(path, st);
  }
  if (absl::Status st = FindSymbols(vocab); !st.ok()) return InFile(path, st);
  return vocab;
}

absl::StatusOr<std::vector<Gpt2Merge>> ReadGpt2Merges(const std::string& path,
                                                      absl::string_view text,
                                                      const Gpt2Vocabulary& vocab) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  // Windows line ends, as Python's text mode and Rust's lines() read them:
  // no byte symbol is a raw '\r', so it can only end a line.
  for (absl::string_view& line : lines) absl::ConsumeSuffix(&line, "\r");
  std::vector<Gpt2Merge> merges;
  absl::flat_hash_map<std::pair<int32_t, int32_t>, size_t> line_of;  // pair -> its line
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == 0 && absl::StartsWith(lines[i], "#version")) continue;
    const std::string where = absl::StrCat(path, " line ", i + 1, ": ");
    absl::StatusOr<Gpt2Merge> merge = ReadMerge(lines[i], vocab);
    if (!merge.ok()) {
      return absl::InvalidArgumentError(where + std::string(merge.status().message()));
    }
    const std::pair<int32_t, int32_t> pair = {merge->left, merge->right};
    if (const auto [it, fresh] = line_of.try_emplace(pair, i + 1); !fresh) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the pair ", QuotedText(lines[i]),
                                                     " was given on line ", it->second));
    }
    merges.push_back(*merge);
  }
  return merges;
}

}  // namespace dagrad::models
