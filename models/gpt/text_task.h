// models/gpt/text_task.h
//
// Byte-level language modelling on a text file, for models::Gpt: the data
// (TextData) and the training config (TextTrainConfig). GPT trainers decay
// matrices only: DecayMatrices (ops/autodiff/optimizer.h).
//
// The file's bytes are the tokens (vocabulary 256: ASCII, UTF-8 and binary
// alike). The first 90% are training data, the last 10% validation. A
// training batch is `batch` windows of seq_len + 1 bytes at offsets drawn
// from Philox(seed, batch index): tokens are a window's first seq_len
// bytes, targets its last seq_len (logits at t predict byte t + 1), so
// batch i is a pure function of (seed, i) and a resumed run sees the
// batches an uninterrupted one would. The validation set is the split's
// consecutive windows (offsets 0, seq_len, 2 seq_len, ...): all
// validation_windows() of them, or the first TextTrainConfig::eval_windows.
//
//   // setup: TextRun
//   DAGRAD_ASSIGN_OR_RETURN(TextData data, TextData::Load("corpus.txt", 64));
//   DAGRAD_ASSIGN_OR_RETURN(TokenBatch b, data.TrainBatch(/*seed=*/0, /*index=*/1, 32));
//   // b.tokens, b.targets int64 (32, 64)

#ifndef DAGRAD_MODELS_GPT_TEXT_TASK_H_
#define DAGRAD_MODELS_GPT_TEXT_TASK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/device/communicator.h"
#include "engine/io/safetensors.h"
#include "engine/plan/memory_budget.h"
#include "engine/tensor.h"
#include "models/gpt/gpt.h"
#include "models/lm_trainer.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"

namespace dagrad::models {


// SplitText is what TextData and TokenTextData share: a text's tokens
// (`Split`: bytes in a std::string, or token ids) split 90/10, and the
// windows of seq_len tokens cut from each split.
template <typename Split>
class SplitText {
 public:
  // TrainBatch returns batch number `index` of the training split.
  absl::StatusOr<TokenBatch> TrainBatch(uint64_t seed, uint64_t index, int64_t batch) const;
  // Validation returns `count` consecutive validation windows from window
  // `first` on: OutOfRange unless 0 <= first, 1 <= count and first + count
  // <= validation_windows().
  absl::StatusOr<TokenBatch> Validation(int64_t first, int64_t count) const;
  // validation_windows is how many windows the validation split holds,
  // (tokens - 1) / seq_len: every token but the first is a target once.
  int64_t validation_windows() const;

  int64_t seq_len() const { return seq_len_; }
  const Split& train() const { return train_; }
  const Split& validation() const { return validation_; }
  // Checksum names the data by its size and CRC-32C ("1234 bytes, crc32c
  // 0a1b2c3d"): a run records it, and a resume on other bytes is refused.
  std::string Checksum() const;
  // SameOnEveryRank is FailedPrecondition, naming `path`, the rank and both
  // checksums, on a rank of `comm` whose data differ from rank 0's: every
  // rank reads the file itself, and another copy of it (another machine's)
  // would silently train on other batches. A collective: every rank calls it.
  absl::Status SameOnEveryRank(Communicator& comm, const std::string& path) const;

  // ToLmData returns the LmTrainer data of `text` (a pointer to the SplitText,
  // raw or shared, that outlives the trainer), batches drawn with `seed`.
  template <typename Pointer>
  static LmData ToLmData(Pointer text, uint64_t seed) {
    return {.train = [text, seed](uint64_t step, int64_t batch) {
              return text->TrainBatch(seed, step, batch);
            },
            .validation = [text](int64_t first, int64_t count) {
              return text->Validation(first, count);
            },
            .validation_windows = text->validation_windows(),
            .window = text->seq_len(),
            .memory = text->Memory()};
  }
  // Memory is what the splits hold, for a run's memory limit.
  MemoryBudget Memory() const {
    MemoryBudget m;
    const int64_t unit = sizeof(typename Split::value_type);
    m.Add("data", absl::StrCat("training split (", train_.size(), " tokens)"),
          static_cast<int64_t>(train_.size()) * unit);
    m.Add("data", absl::StrCat("validation split (", validation_.size(), " tokens)"),
          static_cast<int64_t>(validation_.size()) * unit);
    return m;
  }

 protected:
  SplitText() = default;
  // Cut splits `all` 90/10 into windows of seq_len.
  void Cut(Split all, int64_t seq_len);

  int64_t seq_len_ = 0;
  Split train_, validation_;
};

extern template class SplitText<std::string>;
extern template class SplitText<std::vector<int64_t>>;

class TextData : public SplitText<std::string> {
 public:
  // Load reads the file: NotFound (or ReadFile's error) when it cannot be
  // read; FromBytes's errors.
  static absl::StatusOr<TextData> Load(const std::string& path,
                                       int64_t seq_len);
  // FromBytes splits `bytes`: InvalidArgument, naming `name`, for seq_len
  // < 1, no bytes, or a split shorter than one window (seq_len + 1 bytes):
  // the message says how many bytes the file needs (10 * seq_len + 1).
  static absl::StatusOr<TextData> FromBytes(std::string bytes, int64_t seq_len,
                                            absl::string_view name);

 private:
  TextData() = default;
};

// TokenTextData is TextData over token ids rather than bytes (a text
// encoded by a tokenizer, such as GPT-2's BPE): the same 90/10 split, the
// same training windows drawn from Philox(seed, batch index) and the same
// consecutive validation windows, of seq_len tokens and their next tokens.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(TokenTextData data,
//                           TokenTextData::FromTokens(tokenizer.Encode(text), 32, "corpus.txt"));
//   DAGRAD_ASSIGN_OR_RETURN(TokenBatch b, data.TrainBatch(/*seed=*/0, /*index=*/1, 8));
class TokenTextData : public SplitText<std::vector<int64_t>> {
 public:
  // FromTokens splits `ids`: InvalidArgument, naming `name`, for seq_len <
  // 1, no tokens, a negative id, or a split shorter than one window: the
  // message says how many tokens the text needs (10 * seq_len + 1).
  static absl::StatusOr<TokenTextData> FromTokens(std::vector<int64_t> ids, int64_t seq_len,
                                                  absl::string_view name);

 private:
  TokenTextData() = default;
};

struct TextTrainConfig {
  GptConfig model;   // model.block_size is the window length seq_len
  std::string data;  // the text file
  // batch, steps, optimizer, schedule, seed, ...: AdamW with weight decay
  // 0.1 and no warmup unless set.
  RunConfig run{.batch = 32,
                .optimizer = {.kind = OptimizerKind::kAdamW, .weight_decay = 0.1, .clip_norm = 1.0},
                .warmup = 0};
  // Validation windows scored, >= 0: 0 scores the whole split, N the first
  // min(N, TextData::validation_windows()).
  int64_t eval_windows = 0;
  // initial: when set, the model's starting weights, under its checkpoint
  // names (a model file's: StartFromModelFile), in place of the
  // initializers'; `initial_source` names them in messages.
  std::shared_ptr<const SafetensorsFile> initial;
  std::string initial_source;

  // Validate returns InvalidArgument naming the first bad field
  // (the model's, the text task's, then RunConfig::Validate's).
  absl::Status Validate() const;
  // ToMetadata: the model's (GptConfig::ToMetadata), RunConfig::ToMetadata and
  // the text task's fields: every field that shapes the run's numbers.
  std::map<std::string, std::string> ToMetadata() const;
};

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_TEXT_TASK_H_
