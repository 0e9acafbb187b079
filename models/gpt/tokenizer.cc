#include "models/gpt/tokenizer.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "models/gpt/pretokenizer.h"
#include "models/gpt/tokenizer_files.h"

namespace dagrad::models {
namespace {

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
         static_cast<uint32_t>(right);
}

// A candidate merge in one word: the pair's rank and the position of its
// left symbol. Ordered so that the queue's top is the lowest rank, leftmost.
struct Candidate {
  int32_t rank;
  int32_t pos;
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};
using CandidateQueue =
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>>;

}  // namespace

absl::StatusOr<Gpt2Tokenizer> Gpt2Tokenizer::Load(const std::string& vocab_path,
                                                  const std::string& merges_path) {
  DAGRAD_ASSIGN_OR_RETURN(const std::string vocab_json, ReadFile(vocab_path));
  DAGRAD_ASSIGN_OR_RETURN(const std::string merges_text, ReadFile(merges_path));
  return Parse(vocab_json, merges_text, vocab_path, merges_path);
}

absl::StatusOr<Gpt2Tokenizer> Gpt2Tokenizer::Parse(absl::string_view vocab_json,
                                                   absl::string_view merges_text,
                                                   const std::string& vocab_name,
                                                   const std::string& merges_name) {
  DAGRAD_ASSIGN_OR_RETURN(const Gpt2Vocabulary vocab, ReadGpt2Vocabulary(vocab_name, vocab_json));
  Gpt2Tokenizer t;
  t.token_bytes_ = vocab.token_bytes;
  t.byte_ids_ = vocab.byte_ids;
  t.end_of_text_ = vocab.end_of_text;
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<Gpt2Merge> merges,
                          ReadGpt2Merges(merges_name, merges_text, vocab));
  t.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Gpt2Merge& m = merges[rank];
    t.merges_[PairKey(m.left, m.right)] = {static_cast<int32_t>(rank), m.result};
  }
  return t;
}

absl::StatusOr<Gpt2Tokenizer> Gpt2Tokenizer::LoadDirectory(const std::string& dir) {
  return Load(dir + "/vocab.json", dir + "/merges.txt");
}

// Bpe is encoder.py's loop: merge every occurrence of the lowest-ranked
// adjacent pair, left to right, then look again. The symbols are a linked
// list and the pairs a queue, so a long word costs n log n, not n². All the
// queue's entries of the lowest rank are taken out before any is merged: a
// merge makes pairs of other ranks only (the merged token is longer than
// either part), and a lower one among them waits for the next round, as in
// encoder.py. An entry whose symbols have changed since is skipped.
void Gpt2Tokenizer::Bpe(absl::string_view word, std::vector<int32_t>& out) const {
  const int32_t n = static_cast<int32_t>(word.size());
  std::vector<int32_t> sym(n), next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    sym[i] = byte_ids_[static_cast<uint8_t>(word[i])];
    next[i] = i + 1;
    prev[i] = i - 1;
  }
  CandidateQueue queue;
  const auto consider = [&](int32_t left) {
    if (left < 0 || next[left] >= n) return;
    const auto it = merges_.find(PairKey(sym[left], sym[next[left]]));
    if (it != merges_.end()) queue.push({it->second.rank, left});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  std::vector<int32_t> round;
  while (!queue.empty()) {
    const int32_t rank = queue.top().rank;
    round.clear();
    while (!queue.empty() && queue.top().rank == rank) {
      round.push_back(queue.top().pos);
      queue.pop();
    }
    for (const int32_t pos : round) {
      if (sym[pos] < 0 || next[pos] >= n) continue;
      const auto it = merges_.find(PairKey(sym[pos], sym[next[pos]]));
      if (it == merges_.end() || it->second.rank != rank) continue;
      const int32_t gone = next[pos];
      sym[pos] = it->second.id;
      sym[gone] = -1;
      next[pos] = next[gone];
      if (next[pos] < n) prev[next[pos]] = pos;
      consider(prev[pos]);
      consider(pos);
    }
  }
  for (int32_t i = 0; i < n; i = next[i]) out.push_back(sym[i]);
}

void Gpt2Tokenizer::EncodeWords(absl::string_view text, std::vector<int64_t>& out) const {
  // The cache lives for one call: words repeat within a text, and a
  // tokenizer shared by threads needs no lock.
  absl::flat_hash_map<absl::string_view, std::vector<int32_t>> cache;
  for (const absl::string_view word : Gpt2PreTokenize(text)) {
    auto [it, fresh] = cache.try_emplace(word);
    if (fresh) Bpe(word, it->second);
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
}

std::vector<int64_t> Gpt2Tokenizer::EncodeOrdinary(absl::string_view text) const {
  std::vector<int64_t> ids;
  EncodeWords(text, ids);
  return ids;
}

std::vector<int64_t> Gpt2Tokenizer::Encode(absl::string_view text) const {
  if (end_of_text_ < 0) return EncodeOrdinary(text);
  std::vector<int64_t> ids;
  bool first = true;
  for (const absl::string_view piece : absl::StrSplit(text, kEndOfText)) {
    if (!first) ids.push_back(end_of_text_);
    first = false;
    EncodeWords(piece, ids);
  }
  return ids;
}

absl::StatusOr<std::string> Gpt2Tokenizer::Decode(absl::Span<const int64_t> ids) const {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("token ", i, " is ", ids[i],
                                                     ", not an id of the vocabulary (0 to ",
                                                     vocab_size() - 1, ")"));
    }
    bytes += token_bytes_[ids[i]];
  }
  return bytes;
}

}  // namespace dagrad::models
