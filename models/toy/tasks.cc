#include "models/toy/tasks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/checked_math.h"
#include "engine/philox.h"
#include "engine/status_macros.h"

namespace dagrad::models {

absl::StatusOr<Task> ParseTask(const std::string& name) {
  if (name == "reverse") return Task::kReverse;
  if (name == "copy") return Task::kCopy;
  if (name == "sort") return Task::kSort;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown task '", name, "' (reverse, copy, sort)"));
}

std::string TaskName(Task task) {
  switch (task) {
    case Task::kReverse: return "reverse";
    case Task::kCopy: return "copy";
    case Task::kSort: return "sort";
  }
  return "?";
}

uint64_t EvalSeed(uint64_t train_seed) { return train_seed ^ 0x5eed5eed00000000ull; }

absl::StatusOr<TaskGenerator> TaskGenerator::Create(const TaskConfig& config, uint64_t seed) {
  TaskConfig c = config;
  if (c.min_len == 0) c.min_len = c.seq_len;
  if (c.vocab < 2) {
    return absl::InvalidArgumentError(absl::StrCat("vocab must be >= 2, got ", c.vocab));
  }
  if (c.seq_len < 1) {
    return absl::InvalidArgumentError(absl::StrCat("seq_len must be >= 1, got ", c.seq_len));
  }
  if (c.min_len < 1 || c.min_len > c.seq_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "min_len must be in [1, seq_len=", c.seq_len, "], got ", config.min_len));
  }
  return TaskGenerator(c, seed);
}

absl::StatusOr<int64_t> TaskGenerator::BatchBytes(int64_t batch_size) const {
  DAGRAD_ASSIGN_OR_RETURN(const int64_t tokens,
                          ValidateBytes({batch_size, config_.seq_len}, DType::kInt64));
  DAGRAD_ASSIGN_OR_RETURN(const int64_t lengths, ValidateBytes({batch_size}, DType::kInt64));
  // Tokens and targets: two of the first.
  const std::optional<int64_t> both = CheckedAdd(tokens, tokens);
  const std::optional<int64_t> total = both ? CheckedAdd(*both, lengths) : std::nullopt;
  if (!total.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a batch of ", batch_size, " sequences of ", config_.seq_len, " tokens overflows int64 bytes"));
  }
  return *total;
}

absl::StatusOr<TaskBatch> TaskGenerator::Batch(uint64_t index, int64_t batch_size) const {
  const int64_t T = config_.seq_len;
  DAGRAD_RETURN_IF_ERROR(BatchBytes(batch_size).status());
  TaskBatch b;
  DAGRAD_ASSIGN_OR_RETURN(b.tokens, Tensor::Zeros(DType::kInt64, {batch_size, T}));
  DAGRAD_ASSIGN_OR_RETURN(b.lengths, Tensor::Zeros(DType::kInt64, {batch_size}));
  DAGRAD_ASSIGN_OR_RETURN(b.targets, Tensor::Zeros(DType::kInt64, {batch_size, T}));
  int64_t* tokens = b.tokens.data<int64_t>();
  int64_t* lengths = b.lengths.data<int64_t>();
  int64_t* targets = b.targets.data<int64_t>();
  // One stream per batch (the index's high half goes into the stream id);
  // draws are numbered row by row.
  const RandomStream r{seed_, static_cast<uint32_t>(0x7a5c0000u ^ (index >> 32)),
                       static_cast<uint32_t>(index)};
  auto uniform = [&](uint64_t draw, int64_t lo, int64_t hi) {  // in [lo, hi]
    const uint64_t range = static_cast<uint64_t>(hi - lo + 1);
    return lo + static_cast<int64_t>((static_cast<uint64_t>(r.Bits(draw)) * range) >> 32);
  };
  for (int64_t row = 0; row < batch_size; ++row) {
    const uint64_t base = static_cast<uint64_t>(row) * (T + 1);
    const int64_t len = uniform(base, config_.min_len, config_.seq_len);
    lengths[row] = len;
    int64_t* tok = tokens + row * T;
    int64_t* tgt = targets + row * T;
    for (int64_t i = 0; i < T; ++i) {
      tok[i] = i < len ? uniform(base + 1 + i, 1, config_.vocab - 1) : 0;
      tgt[i] = kIgnoreIndex;
    }
    for (int64_t i = 0; i < len; ++i) {
      switch (config_.task) {
        case Task::kReverse: tgt[i] = tok[len - 1 - i]; break;
        case Task::kCopy: tgt[i] = tok[i]; break;
        case Task::kSort: tgt[i] = tok[i]; break;
      }
    }
    if (config_.task == Task::kSort) std::sort(tgt, tgt + len);
  }
  return b;
}

}  // namespace dagrad::models
