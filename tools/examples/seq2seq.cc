// d2l's Transformer encoder-decoder from dagrad::nn layers: the decoder attends to its own
// prefix (causal self-attention) and to the encoder's output (cross-attention), and learns
// to reverse sequences. Greedy decoding of held-out sequences (drawn from another seed, less
// any that training happened to draw too) must get 90% exactly right.
#include <dagrad/dagrad.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>
using namespace dagrad;
constexpr int64_t kVocab = 10, kLen = 6, kDim = 32, kHeads = 4, kBatch = 64, kLayers = 2;

// Token embeddings scaled by sqrt(dim) plus sinusoidal positions (as d2l's), post-norm
// encoder blocks, decoder blocks with cross-attention, and a linear head.
class Seq2Seq {
 public:
  absl::Status Init(Graph& g) {
    const nn::EmbeddingOptions embedding{.num_embeddings = kVocab, .embedding_dim = kDim};
    DAGRAD_ASSIGN_OR_RETURN(source_embedding_, nn::Embedding::Create(g, "src_emb", embedding));
    DAGRAD_ASSIGN_OR_RETURN(target_embedding_, nn::Embedding::Create(g, "tgt_emb", embedding));
    for (int i = 0; i < kLayers; ++i) {
      nn::TransformerBlockOptions block{.d_model = kDim, .nhead = kHeads,
                                        .dim_feedforward = 2 * kDim, .dropout = 0.0};
      const std::string index = std::to_string(i);
      DAGRAD_ASSIGN_OR_RETURN(encoder_[i], nn::TransformerBlock::Create(g, "enc/" + index, block));
      block.causal = block.cross_attention = true;
      DAGRAD_ASSIGN_OR_RETURN(decoder_[i], nn::TransformerBlock::Create(g, "dec/" + index, block));
    }
    DAGRAD_ASSIGN_OR_RETURN(head_, nn::Linear::Create(g, "head", {.in_features = kDim,
                                                                  .out_features = kVocab}));
    return absl::OkStatus();
  }

  // source, decoder_in: int64 (B, T) -> logits (B, T, vocab).
  Value operator()(Value source, Value decoder_in) const {
    Value memory = Embed(source_embedding_, source), x = Embed(target_embedding_, decoder_in);
    for (const nn::TransformerBlock& block : encoder_) memory = block(memory);
    for (const nn::TransformerBlock& block : decoder_) x = block(x, {.memory = memory});
    return head_(x);
  }

 private:
  static Value Embed(const nn::Embedding& embedding, Value tokens) {
    return models::AddSinusoidal(embedding(tokens) * std::sqrt(1.0 * kDim));
  }

  nn::Embedding source_embedding_, target_embedding_;
  nn::TransformerBlock encoder_[kLayers], decoder_[kLayers];
  nn::Linear head_;
};

// ShiftRight returns the decoder's input for `targets`: 0 (begin), then targets[:-1].
absl::StatusOr<Tensor> ShiftRight(const Tensor& targets) {
  std::vector<int64_t> shifted(targets.data<int64_t>(), targets.data<int64_t>() + kBatch * kLen);
  for (int64_t i = kBatch * kLen - 1; i >= 0; --i) shifted[i] = i % kLen ? shifted[i - 1] : 0;
  return Tensor::FromVector<int64_t>({kBatch, kLen}, shifted);
}

// Trains, then decodes a held-out batch greedily, one position per run; returns the
// fraction of sequences reversed without a mistake.
absl::StatusOr<double> TrainAndDecode(int steps) {
  Graph g;
  Value source = g.Input("source", DType::kInt64, {kBatch, kLen});
  Value decoder_in = g.Input("decoder_in", DType::kInt64, {kBatch, kLen});
  Value target = g.Input("target", DType::kInt64, {kBatch, kLen});
  Seq2Seq model;
  DAGRAD_RETURN_IF_ERROR(model.Init(g));
  Value logits = model(source, decoder_in), loss = CrossEntropy(logits, target);
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep step,
                          BuildTrainingStep(loss, g.Parameters(), {.clip_norm = 1.0}));
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(auto train, exec.Compile({loss}, step.updates));
  DAGRAD_ASSIGN_OR_RETURN(auto decode, exec.Compile({logits}));
  const models::TaskConfig reverse = {.task = models::Task::kReverse, .vocab = kVocab,
                                      .seq_len = kLen};
  constexpr uint64_t kSeed = 1;
  DAGRAD_ASSIGN_OR_RETURN(models::TaskGenerator task,
                          models::TaskGenerator::Create(reverse, kSeed));
  std::set<std::vector<int64_t>> seen;  // every training sequence
  for (int t = 1; t <= steps; ++t) {
    DAGRAD_ASSIGN_OR_RETURN(models::TaskBatch b, task.Batch(t, kBatch));
    const int64_t* rows = b.tokens.data<int64_t>();
    for (int64_t r = 0; r < kBatch; ++r) seen.emplace(rows + r * kLen, rows + (r + 1) * kLen);
    DAGRAD_ASSIGN_OR_RETURN(Tensor shifted, ShiftRight(b.targets));
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*train, {{source, b.tokens}, {target, b.targets},
        {decoder_in, shifted}, {step.lr, Tensor::Scalar(3e-3 * (steps - t + 1) / steps)},
        {step.step, Tensor::Scalar(1.0 * t)}}));
    if (t % 100 == 0) std::printf("step %d: loss %.4f\n", t, out[0].data<float>()[0]);
  }
  DAGRAD_ASSIGN_OR_RETURN(models::TaskGenerator eval,
                          models::TaskGenerator::Create(reverse, models::EvalSeed(kSeed)));
  DAGRAD_ASSIGN_OR_RETURN(models::TaskBatch held_out, eval.Batch(0, kBatch));
  std::vector<int64_t> predicted(kBatch * kLen);
  DAGRAD_ASSIGN_OR_RETURN(Tensor prefix, Tensor::FromVector<int64_t>({kBatch, kLen}, predicted));
  for (int64_t i = 0; i < kLen; ++i) {  // prefix holds 0, then the predictions before i
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*decode, {{source, held_out.tokens},
                                                         {decoder_in, prefix}}));
    for (int64_t b = 0; b < kBatch; ++b) {
      const float* row = out[0].data<float>() + (b * kLen + i) * kVocab;
      predicted[b * kLen + i] = std::max_element(row, row + kVocab) - row;
      if (i + 1 < kLen) prefix.data<int64_t>()[b * kLen + i + 1] = predicted[b * kLen + i];
    }
  }
  int exact = 0, unseen = 0;
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t* in = held_out.tokens.data<int64_t>() + b * kLen;
    if (seen.count(std::vector<int64_t>(in, in + kLen))) continue;  // trained on: not held out
    const int64_t* want = held_out.targets.data<int64_t>() + b * kLen;
    exact += std::equal(want, want + kLen, predicted.begin() + b * kLen);
    ++unseen;
  }
  std::printf("%d of %d held-out sequences were never trained on\n", unseen, int(kBatch));
  return unseen == 0 ? 0.0 : 1.0 * exact / unseen;
}

int main() {  // fails unless 90% of the held-out sequences come out reversed
  absl::StatusOr<double> exact = TrainAndDecode(/*steps=*/600);
  std::printf("reversed: %.3f (%s)\n", exact.value_or(0), exact.status().ToString().c_str());
  return exact.value_or(0) >= 0.9 ? 0 : 1;
}
