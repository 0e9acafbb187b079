// Training at shapes that vary: each batch holds 4 to 8 sequences of 3 to 12 tokens, counting
// up from a random start by a step of 1, 2 or 3 (mod 16), with no padding. A causal transformer
// learns the next token; from the second token on it can infer the step from what it has seen.
// One AdamW (MakeOptimizer) serves a ShapeFamily of training steps, one per shape it meets.
#include <dagrad/dagrad.h>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
using namespace dagrad;
constexpr int64_t kVocab = 16, kDim = 32, kMaxLen = 12, kMaxBatch = 8;

struct Counting {  // the sequences' tokens and their next tokens, (batch, len) each
  Tensor tokens, targets;
};
absl::StatusOr<Counting> Draw(std::mt19937& rng, int64_t batch, int64_t len) {
  std::vector<int64_t> tokens, targets;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = rng() % kVocab, step = 1 + rng() % 3;
    for (int64_t i = 0; i < len; ++i) {
      tokens.push_back((start + i * step) % kVocab);
      targets.push_back((start + (i + 1) * step) % kVocab);
    }
  }
  DAGRAD_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector<int64_t>({batch, len}, tokens));
  DAGRAD_ASSIGN_OR_RETURN(Tensor y, Tensor::FromVector<int64_t>({batch, len}, targets));
  return Counting{t, y};
}

// Trains, then returns the accuracy from the second token on over fresh sequences of every length.
absl::StatusOr<double> Train(int steps) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(nn::Embedding embed, nn::Embedding::Create(g, "emb",
      {.num_embeddings = kVocab, .embedding_dim = kDim}));
  DAGRAD_ASSIGN_OR_RETURN(nn::TransformerBlock block, nn::TransformerBlock::Create(g, "block",
      {.d_model = kDim, .nhead = 4, .dim_feedforward = 2 * kDim, .dropout = 0.0, .causal = true}));
  DAGRAD_ASSIGN_OR_RETURN(nn::Linear head, nn::Linear::Create(g, "head",
      {.in_features = kDim, .out_features = kVocab}));
  auto logits = [&](Value tokens) { return head(block(models::AddSinusoidal(embed(tokens)))); };
  DAGRAD_ASSIGN_OR_RETURN(Optimizer adamw, MakeOptimizer(g.Parameters(),
      {.kind = OptimizerKind::kAdamW, .weight_decay = 0.01, .clip_norm = 1.0}));
  Executor exec(g);
  const ShapeFamilyOptions shapes = {
      .inputs = {{"tokens", DType::kInt64, {"batch", "len"}},
                 {"targets", DType::kInt64, {"batch", "len"}}},
      .bounds = {{"batch", kMaxBatch}, {"len", kMaxLen}},
      .max_plans = 50};  // every shape's plan kept: 5 batch sizes x 10 lengths
  DAGRAD_ASSIGN_OR_RETURN(auto train, ShapeFamily::Create(g, exec, shapes,
      [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
        Value loss = CrossEntropy(logits(b.input("tokens")), b.input("targets"));
        DAGRAD_ASSIGN_OR_RETURN(TrainingStep step, BuildTrainingStep(loss, adamw));
        return Specialized{.fetches = {step.loss}, .targets = step.updates};
      }));
  std::mt19937 rng(1);
  const auto start = std::chrono::steady_clock::now();
  for (int t = 1; t <= steps; ++t) {
    const int64_t batch = 4 + rng() % 5, len = 3 + rng() % (kMaxLen - 2);
    DAGRAD_ASSIGN_OR_RETURN(Counting c, Draw(rng, batch, len));
    DAGRAD_ASSIGN_OR_RETURN(auto out, train->Run({{"tokens", c.tokens}, {"targets", c.targets}},
        {.training = true, .step = static_cast<uint64_t>(t)},
        {{adamw.lr(), Tensor::Scalar(3e-3)}, {adamw.step(), Tensor::Scalar<double>(t)}}));
    if (t % 100 == 0) std::printf("step %d (%lld x %lld): loss %.4f\n", t, (long long)batch,
                                  (long long)len, out[0].data<float>()[0]);
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::printf("%d steps in %.3f s, %lld shapes built, %lld plans compiled\n", steps,
              took.count(), (long long)train->builds(), (long long)train->compiles());
  DAGRAD_ASSIGN_OR_RETURN(auto predict, ShapeFamily::Create(g, exec,
      {.inputs = {shapes.inputs[0]}, .bounds = {{"batch", kMaxBatch}, {"len", kMaxLen}}},
      [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
        return Specialized{.fetches = {ArgMax(logits(b.input("tokens")), -1)}};
      }));
  std::mt19937 held_out(2);
  int64_t right = 0, scored = 0;
  for (int64_t len = 3; len <= kMaxLen; ++len) {
    DAGRAD_ASSIGN_OR_RETURN(Counting c, Draw(held_out, kMaxBatch, len));
    DAGRAD_ASSIGN_OR_RETURN(auto out, predict->Run({{"tokens", c.tokens}}));
    for (int64_t i = 0; i < kMaxBatch * len; ++i) {
      if (i % len == 0) continue;  // one token does not show the step
      right += out[0].data<int64_t>()[i] == c.targets.data<int64_t>()[i];
      ++scored;
    }
  }
  return 1.0 * right / scored;
}

int main() {  // fails unless 95% of the held-out next tokens from the second on are right
  absl::StatusOr<double> accuracy = Train(/*steps=*/600);
  std::printf("accuracy %.3f (%s)\n", accuracy.value_or(0), accuracy.status().ToString().c_str());
  return accuracy.value_or(0) >= 0.95 ? 0 : 1;
}
