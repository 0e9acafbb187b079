// models/toy/tasks.h
//
// Synthetic sequence tasks for the toy transformer, drawn from a counter-
// based generator: batch i of a task is a pure function of (seed, i), so a
// run resumed at step k sees exactly the batches an uninterrupted run would,
// and held-out sets come from a different seed than training batches.
//
// Tokens are uniform in [1, vocab); 0 is padding, at positions >= length,
// where the target is -100 (ignored by the loss) and the keys are masked.
// Lengths are uniform in [min_len, seq_len] (fixed when they are equal).
//   reverse: target[i] = tokens[L-1-i]
//   copy:    target[i] = tokens[i]
//   sort:    target = the valid tokens in ascending order
//
//   DAGRAD_ASSIGN_OR_RETURN(TaskGenerator gen,
//       TaskGenerator::Create({.task = Task::kReverse, .vocab = 16, .seq_len = 32}, seed));
//   DAGRAD_ASSIGN_OR_RETURN(TaskBatch b, gen.Batch(/*index=*/step, /*batch_size=*/64));

#ifndef DAGRAD_MODELS_TOY_TASKS_H_
#define DAGRAD_MODELS_TOY_TASKS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/tensor.h"

namespace dagrad::models {

enum class Task { kReverse, kCopy, kSort };

// ParseTask accepts "reverse", "copy", "sort".
absl::StatusOr<Task> ParseTask(const std::string& name);
std::string TaskName(Task task);

inline constexpr int64_t kIgnoreIndex = -100;

struct TaskConfig {
  Task task = Task::kReverse;
  int64_t vocab = 16;    // token ids are in [1, vocab); 0 is padding
  int64_t seq_len = 32;  // T
  int64_t min_len = 0;   // 0 means seq_len (fixed length)
};

struct TaskBatch {
  Tensor tokens;   // int64 (B, T)
  Tensor lengths;  // int64 (B)
  Tensor targets;  // int64 (B, T), -100 where ignored
};

class TaskGenerator {
 public:
  // Create validates the config: vocab >= 2, seq_len >= 1,
  // 1 <= min_len <= seq_len (after 0 -> seq_len). InvalidArgument otherwise.
  static absl::StatusOr<TaskGenerator> Create(const TaskConfig& config, uint64_t seed);

  // Batch returns batch number `index` (any order, any number of times).
  // InvalidArgument for batch_size < 0 or a batch over 2^62 bytes,
  // ResourceExhausted when its memory cannot be allocated.
  absl::StatusOr<TaskBatch> Batch(uint64_t index, int64_t batch_size) const;

  // BatchBytes returns the bytes Batch(_, batch_size) allocates, computed
  // with checked arithmetic; the errors of Batch, without allocating.
  absl::StatusOr<int64_t> BatchBytes(int64_t batch_size) const;

  const TaskConfig& config() const { return config_; }

 private:
  TaskGenerator(const TaskConfig& config, uint64_t seed) : config_(config), seed_(seed) {}

  TaskConfig config_;
  uint64_t seed_;
};

// EvalSeed derives the held-out set's seed from a training seed.
uint64_t EvalSeed(uint64_t train_seed);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_TOY_TASKS_H_
