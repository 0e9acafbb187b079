#include "models/gpt/text_task.h"

#include <array>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/io/crc32c.h"
#include "engine/io/file_io.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/optim.h"
#include "ops/reduce.h"

namespace dagrad::models {

namespace {

// CheckSplits: `n` units (bytes or tokens) split 90/10 hold a window of
// seq_len + 1 in each split.
absl::Status CheckSplits(int64_t n, int64_t seq_len, absl::string_view name,
                         absl::string_view unit, absl::string_view empty) {
  if (seq_len < 1) {
    return absl::InvalidArgumentError(absl::StrCat("seq_len must be >= 1, got ", seq_len));
  }
  const int64_t train = n * 9 / 10;  // n is a file's size: n * 9 does not overflow
  if (n > 0 && train > seq_len && n - train > seq_len) return absl::OkStatus();
  // The validation split, n - n*9/10 = ceil(n/10), is the shorter: it holds
  // a window from n = 10 * seq_len + 1 on (in 128 bits: seq_len may be huge).
  std::ostringstream need;
  need << "training on windows of seq_len + 1 = " << absl::uint128(seq_len) + 1 << " " << unit
       << " needs at least " << absl::uint128(seq_len) * 10 + 1;
  return absl::InvalidArgumentError(absl::StrCat(
      name, ": ", n == 0 ? std::string(empty) : absl::StrCat("only ", n, " ", unit), "; ",
      need.str(), " (90% training, 10% validation, a window each)"));
}

int64_t TokenAt(const std::string& split, int64_t i) {
  return static_cast<unsigned char>(split[i]);
}
int64_t TokenAt(const std::vector<int64_t>& split, int64_t i) { return split[i]; }

// Windows: the windows of T tokens at `offsets` of `split`, and the tokens
// that follow each.
template <typename Split>
absl::StatusOr<TokenBatch> Windows(const Split& split, const std::vector<int64_t>& offsets,
                                   int64_t T) {
  const int64_t B = static_cast<int64_t>(offsets.size());
  TokenBatch b;
  DAGRAD_ASSIGN_OR_RETURN(b.tokens, Tensor::Zeros(DType::kInt64, {B, T}));
  DAGRAD_ASSIGN_OR_RETURN(b.targets, Tensor::Zeros(DType::kInt64, {B, T}));
  int64_t* tokens = b.tokens.data<int64_t>();
  int64_t* targets = b.targets.data<int64_t>();
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t t = 0; t < T; ++t) {
      tokens[i * T + t] = TokenAt(split, offsets[i] + t);
      targets[i * T + t] = TokenAt(split, offsets[i] + t + 1);
    }
  }
  return b;
}

// TrainOffsets: batch `index`'s window starts in [0, starts), from
// Philox(seed, (row, index)).
absl::StatusOr<std::vector<int64_t>> TrainOffsets(uint64_t seed, uint64_t index, int64_t batch,
                                                  uint64_t starts) {
  if (batch < 1) return absl::InvalidArgumentError(absl::StrCat("batch must be >= 1, got ", batch));
  std::vector<int64_t> offsets(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const PhiloxBlock r = Philox4x32_10(
        {{static_cast<uint32_t>(i), static_cast<uint32_t>(index),
          static_cast<uint32_t>(index >> 32), 0x7e47u}},
        static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    const uint64_t bits = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
    offsets[i] = static_cast<int64_t>(bits % starts);
  }
  return offsets;
}

// ValidationOffsets: the starts of windows [first, first + count) of the
// `n` consecutive windows of seq_len.
absl::StatusOr<std::vector<int64_t>> ValidationOffsets(int64_t first, int64_t count, int64_t n,
                                                       int64_t seq_len) {
  if (first < 0 || count < 1 || first > n - count) {
    return absl::OutOfRangeError(absl::StrCat("validation windows [", first, ", ", first,
                                              " + ", count, ") are not within the split's ",
                                              n, " windows"));
  }
  std::vector<int64_t> offsets(count);
  for (int64_t i = 0; i < count; ++i) offsets[i] = (first + i) * seq_len;
  return offsets;
}

}  // namespace

absl::StatusOr<TextData> TextData::Load(const std::string& path, int64_t seq_len) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return FromBytes(std::move(bytes), seq_len, path);
}

absl::StatusOr<TextData> TextData::FromBytes(std::string bytes, int64_t seq_len,
                                             absl::string_view name) {
  DAGRAD_RETURN_IF_ERROR(CheckSplits(static_cast<int64_t>(bytes.size()), seq_len, name, "bytes",
                                     "the file is empty"));
  TextData d;
  d.Cut(std::move(bytes), seq_len);
  return d;
}

absl::StatusOr<TokenTextData> TokenTextData::FromTokens(std::vector<int64_t> ids,
                                                        int64_t seq_len,
                                                        absl::string_view name) {
  const int64_t n = static_cast<int64_t>(ids.size());
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": token ", i, " has the negative id ", ids[i]));
    }
  }
  DAGRAD_RETURN_IF_ERROR(CheckSplits(n, seq_len, name, "tokens", "the text has no tokens"));
  TokenTextData d;
  d.Cut(std::move(ids), seq_len);
  return d;
}

template <typename Split>
void SplitText<Split>::Cut(Split all, int64_t seq_len) {
  const size_t train = all.size() * 9 / 10;
  seq_len_ = seq_len;
  validation_ = Split(all.begin() + train, all.end());
  all.resize(train);
  train_ = std::move(all);
}

template <typename Split>
absl::StatusOr<TokenBatch> SplitText<Split>::TrainBatch(uint64_t seed, uint64_t index,
                                                        int64_t batch) const {
  // offsets 0..starts-1
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> offsets,
                          TrainOffsets(seed, index, batch, train_.size() - seq_len_));
  return Windows(train_, offsets, seq_len_);
}

template <typename Split>
int64_t SplitText<Split>::validation_windows() const {
  return (static_cast<int64_t>(validation_.size()) - 1) / seq_len_;
}

template <typename Split>
absl::StatusOr<TokenBatch> SplitText<Split>::Validation(int64_t first, int64_t count) const {
  DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> offsets,
                          ValidationOffsets(first, count, validation_windows(), seq_len_));
  return Windows(validation_, offsets, seq_len_);
}

namespace {

absl::string_view RawBytes(const std::string& s) { return s; }
absl::string_view RawBytes(const std::vector<int64_t>& ids) {
  return {reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t)};
}

template <typename Split>
constexpr const char* kUnit = std::is_same_v<Split, std::string> ? "bytes" : "tokens";

// SizeAndCrc: the units of both splits and their CRC-32C, as one array to
// broadcast.
template <typename Split>
std::array<uint64_t, 2> SizeAndCrc(const Split& train, const Split& validation) {
  return {train.size() + validation.size(),
          ExtendCrc32c(Crc32c(RawBytes(train)), RawBytes(validation))};
}

template <typename Split>
std::string Describe(const std::array<uint64_t, 2>& sum) {
  return absl::StrFormat("%d %s, crc32c %08x", sum[0], kUnit<Split>, sum[1]);
}

}  // namespace

template <typename Split>
std::string SplitText<Split>::Checksum() const {
  return Describe<Split>(SizeAndCrc(train_, validation_));
}

template <typename Split>
absl::Status SplitText<Split>::SameOnEveryRank(Communicator& comm, const std::string& path) const {
  const std::array<uint64_t, 2> own = SizeAndCrc(train_, validation_);
  std::array<uint64_t, 2> root = own;
  DAGRAD_RETURN_IF_ERROR(comm.Broadcast(root.data(), sizeof(root), 0));
  if (root == own) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s holds other %s on rank %d than on rank 0 (%s; rank 0: %s): every rank must read the "
      "same file",
      path, kUnit<Split>, comm.rank(), Describe<Split>(own), Describe<Split>(root)));
}

template class SplitText<std::string>;
template class SplitText<std::vector<int64_t>>;

absl::Status TextTrainConfig::Validate() const {
  DAGRAD_RETURN_IF_ERROR(model.Validate());
  if (model.vocab != 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("text models are byte-level: vocab 256, got ", model.vocab));
  }
  if (eval_windows < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval_windows must be >= 0 (0: the whole validation split), got ", eval_windows));
  }
  return run.Validate();
}

std::map<std::string, std::string> TextTrainConfig::ToMetadata() const {
  std::map<std::string, std::string> m = model.ToMetadata();
  m.merge(run.ToMetadata());
  m["task"] = "text";
  m["data"] = data;
  m["eval_windows"] = absl::StrCat(eval_windows);
  return m;
}

}  // namespace dagrad::models
