#include "models/gpt/text_task.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/optim.h"
#include "ops/reduce.h"

namespace dagrad::models {

absl::StatusOr<TextData> TextData::Load(const std::string& path,
                                        int64_t seq_len) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return FromBytes(std::move(bytes), seq_len, path);
}

absl::StatusOr<TextData> TextData::FromBytes(std::string bytes, int64_t seq_len,
                                             absl::string_view name) {
  if (seq_len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("seq_len must be >= 1, got ", seq_len));
  }
  const int64_t n = static_cast<int64_t>(bytes.size());
  const int64_t train = n * 9 / 10, window = seq_len + 1;
  if (n == 0 || train < window || n - train < window) {
    // The validation split, n - n*9/10 = ceil(n/10) bytes, is the shorter:
    // it holds a window from n = 10 * seq_len + 1 on.
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ",
        n == 0 ? "the file is empty" : absl::StrCat("only ", n, " bytes"),
        "; training on windows of seq_len + 1 = ", window,
        " bytes needs at least ", 10 * seq_len + 1,
        " (90% training, 10% validation, a window each)"));
  }
  TextData d;
  d.seq_len_ = seq_len;
  d.validation_ = bytes.substr(train);
  bytes.resize(train);
  d.train_ = std::move(bytes);
  return d;
}

absl::StatusOr<TokenBatch> TextData::Windows(
    const std::string& split, const std::vector<int64_t>& offsets) const {
  const int64_t B = static_cast<int64_t>(offsets.size()), T = seq_len_;
  TokenBatch b;
  DAGRAD_ASSIGN_OR_RETURN(b.tokens, Tensor::Zeros(DType::kInt64, {B, T}));
  DAGRAD_ASSIGN_OR_RETURN(b.targets, Tensor::Zeros(DType::kInt64, {B, T}));
  int64_t* tokens = b.tokens.data<int64_t>();
  int64_t* targets = b.targets.data<int64_t>();
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t t = 0; t < T; ++t) {
      tokens[i * T + t] = static_cast<unsigned char>(split[offsets[i] + t]);
      targets[i * T + t] =
          static_cast<unsigned char>(split[offsets[i] + t + 1]);
    }
  }
  return b;
}

absl::StatusOr<TokenBatch> TextData::TrainBatch(uint64_t seed, uint64_t index,
                                               int64_t batch) const {
  if (batch < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("batch must be >= 1, got ", batch));
  const uint64_t starts =
      train_.size() - static_cast<uint64_t>(seq_len_);  // offsets 0..starts-1
  std::vector<int64_t> offsets(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const PhiloxBlock r = Philox4x32_10(
        {{static_cast<uint32_t>(i), static_cast<uint32_t>(index),
          static_cast<uint32_t>(index >> 32), 0x7e47u}},
        static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    const uint64_t bits = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
    offsets[i] = static_cast<int64_t>(bits % starts);
  }
  return Windows(train_, offsets);
}

int64_t TextData::validation_windows() const {
  return (static_cast<int64_t>(validation_.size()) - 1) / seq_len_;
}

absl::StatusOr<TokenBatch> TextData::Validation(int64_t first, int64_t count) const {
  const int64_t n = validation_windows();
  if (first < 0 || count < 1 || first > n - count) {
    return absl::OutOfRangeError(absl::StrCat("validation windows [", first, ", ", first,
                                              " + ", count, ") are not within the split's ",
                                              n, " windows"));
  }
  std::vector<int64_t> offsets(count);
  for (int64_t i = 0; i < count; ++i) offsets[i] = (first + i) * seq_len_;
  return Windows(validation_, offsets);
}

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
