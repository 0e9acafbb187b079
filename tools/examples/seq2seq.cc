// d2l's Transformer encoder-decoder: the decoder attends to its own prefix (causal
// self-attention) and to the encoder's output (cross-attention), and learns to reverse
// sequences. Greedy decoding of held-out sequences must get 90% of them exactly right.
#include <dagrad/dagrad.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>
using namespace dagrad;
using namespace dagrad::models;
constexpr int64_t kVocab = 10, kLen = 6, kDim = 32, kHeads = 4, kFfn = 64, kBatch = 64;

// Token embedding scaled by sqrt(dim) plus sinusoidal positions, as d2l's.
Value Embed(Graph& g, const std::string& name, Value tokens) {
  Graph::Scope scope(g, name);
  Value table = g.Parameter("weight", {kVocab, kDim}, Initializer::Normal(0, 1));
  return AddSinusoidal(Embedding(table, tokens) * std::sqrt(1.0 * kDim));
}

// d2l's TransformerDecoderBlock: masked self-attention, attention to the encoder's
// output, a ReLU MLP, each added to its input and layer-normalised.
struct DecoderBlock {
  MultiHeadAttention self_attn, cross_attn;
  LinearLayer linear1, linear2;
  std::vector<LayerNormLayer> norms;

  static absl::StatusOr<DecoderBlock> Create(Graph& g, const std::string& name) {
    Graph::Scope scope(g, name);
    const MultiHeadAttentionConfig config{.embed_dim = kDim, .num_heads = kHeads};
    DAGRAD_ASSIGN_OR_RETURN(auto self_attn, MultiHeadAttention::Create(g, "self_attn", config));
    DAGRAD_ASSIGN_OR_RETURN(auto cross_attn, MultiHeadAttention::Create(g, "cross_attn", config));
    return DecoderBlock{self_attn, cross_attn, LinearLayer(g, "linear1", kDim, kFfn),
                        LinearLayer(g, "linear2", kFfn, kDim),
                        {LayerNormLayer(g, "norm1", kDim), LayerNormLayer(g, "norm2", kDim),
                         LayerNormLayer(g, "norm3", kDim)}};
  }
  Value operator()(Value x, Value memory) const {
    x = norms[0](x + self_attn(x, x, x, {.causal = true}).output);
    x = norms[1](x + cross_attn(x, memory, memory).output);
    return norms[2](x + linear2(Relu(linear1(x))));
  }
};

struct Model {
  Graph g;
  Value source = g.Input("source", DType::kInt64, {kBatch, kLen});
  Value decoder_in = g.Input("decoder_in", DType::kInt64, {kBatch, kLen});  // 0, then targets
  Value target = g.Input("target", DType::kInt64, {kBatch, kLen});
  Value logits, loss;

  absl::Status Build(int layers) {
    Value memory = Embed(g, "source_embedding", source);
    Value x = Embed(g, "target_embedding", decoder_in);
    for (int i = 0; i < layers; ++i) {
      DAGRAD_ASSIGN_OR_RETURN(auto encoder, TransformerEncoderLayer::Create(
          g, "encoder/" + std::to_string(i), {.dim = kDim, .heads = kHeads, .ffn = kFfn}));
      memory = encoder(memory, {});
    }
    for (int i = 0; i < layers; ++i) {
      DAGRAD_ASSIGN_OR_RETURN(auto block, DecoderBlock::Create(g, "decoder/" + std::to_string(i)));
      x = block(x, memory);
    }
    logits = LinearLayer(g, "head", kDim, kVocab)(x);
    loss = CrossEntropy(logits, target);
    return g.status();
  }
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
  Model m;
  DAGRAD_RETURN_IF_ERROR(m.Build(/*layers=*/2));
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep step, BuildTrainingStep(m.loss, m.g.Parameters(), {}));
  Executor exec(m.g);
  DAGRAD_ASSIGN_OR_RETURN(auto train, exec.Compile({m.loss}, step.updates));
  DAGRAD_ASSIGN_OR_RETURN(auto decode, exec.Compile({m.logits}));
  DAGRAD_ASSIGN_OR_RETURN(TaskGenerator task, TaskGenerator::Create(
      {.task = Task::kReverse, .vocab = kVocab, .seq_len = kLen}, /*seed=*/1));
  for (int t = 1; t <= steps; ++t) {
    TaskBatch b = task.Batch(t, kBatch);
    DAGRAD_ASSIGN_OR_RETURN(Tensor decoder_in, ShiftRight(b.targets));
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*train, {{m.source, b.tokens}, {m.target, b.targets},
        {m.decoder_in, decoder_in}, {step.lr, Tensor::Scalar(3e-3)},
        {step.step, Tensor::Scalar(1.0 * t)}}));
    if (t % 100 == 0) std::printf("step %d: loss %.4f\n", t, out[0].data<float>()[0]);
  }
  TaskBatch held_out = task.Batch(/*index=*/0, kBatch);  // training used 1..steps
  std::vector<int64_t> predicted(kBatch * kLen);
  DAGRAD_ASSIGN_OR_RETURN(Tensor prefix, Tensor::FromVector<int64_t>({kBatch, kLen}, predicted));
  for (int64_t i = 0; i < kLen; ++i) {  // prefix holds 0, then the predictions before i
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*decode, {{m.source, held_out.tokens},
                                                         {m.decoder_in, prefix}}));
    for (int64_t b = 0; b < kBatch; ++b) {
      const float* row = out[0].data<float>() + (b * kLen + i) * kVocab;
      predicted[b * kLen + i] = std::max_element(row, row + kVocab) - row;
      if (i + 1 < kLen) prefix.data<int64_t>()[b * kLen + i + 1] = predicted[b * kLen + i];
    }
  }
  int exact = 0;
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t* want = held_out.targets.data<int64_t>() + b * kLen;
    exact += std::equal(want, want + kLen, predicted.begin() + b * kLen);
  }
  return 1.0 * exact / kBatch;
}

int main() {  // fails unless 90% of the held-out sequences come out reversed
  absl::StatusOr<double> exact = TrainAndDecode(/*steps=*/600);
  std::printf("reversed: %.3f (%s)\n", exact.value_or(0), exact.status().ToString().c_str());
  return exact.value_or(0) >= 0.9 ? 0 : 1;
}
