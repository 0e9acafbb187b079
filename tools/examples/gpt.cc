// A character-level GPT from dagrad::nn layers, shaped as nanoGPT's (token and position
// embeddings, pre-norm causal blocks with GELU, a head tied to the token embedding),
// trained for a few hundred steps on a sonnet. Its loss must fall below 1.0 nat a
// character (uniform guessing: ln 40 = 3.7); then it continues the opening greedily.
#include <dagrad/dagrad.h>
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>
using namespace dagrad;

constexpr char kText[] =  // Shakespeare, Sonnet 18
    "Shall I compare thee to a summer's day?\nThou art more lovely and more temperate:\n"
    "Rough winds do shake the darling buds of May,\nAnd summer's lease hath all too short "
    "a date;\nSometime too hot the eye of heaven shines,\nAnd often is his gold complexion "
    "dimm'd;\nAnd every fair from fair sometime declines,\nBy chance or nature's changing "
    "course untrimm'd;\nBut thy eternal summer shall not fade,\nNor lose possession of that "
    "fair thou ow'st;\nNor shall death brag thou wander'st in his shade,\nWhen in eternal "
    "lines to time thou grow'st:\nSo long as men can breathe or eyes can see,\nSo long lives "
    "this, and this gives life to thee.\n";
constexpr int64_t kBatch = 16, kContext = 32, kDim = 64, kHeads = 4, kLayers = 2;

class Gpt {
 public:
  absl::Status Init(Graph& g, int64_t vocab) {
    DAGRAD_ASSIGN_OR_RETURN(wte_, nn::Embedding::Create(g, "wte", {.num_embeddings = vocab,
                                                                   .embedding_dim = kDim}));
    DAGRAD_ASSIGN_OR_RETURN(wpe_, nn::Embedding::Create(g, "wpe", {.num_embeddings = kContext,
                                                                   .embedding_dim = kDim}));
    for (int i = 0; i < kLayers; ++i) {
      DAGRAD_ASSIGN_OR_RETURN(blocks_[i], nn::TransformerBlock::Create(g, "h/" + std::to_string(i),
          {.d_model = kDim, .nhead = kHeads, .dim_feedforward = 4 * kDim, .dropout = 0.0,
           .activation = nn::Activation::kGelu, .norm_first = true, .causal = true}));
    }
    DAGRAD_ASSIGN_OR_RETURN(ln_f_, nn::LayerNorm::Create(g, "ln_f", {.normalized_shape = kDim}));
    positions_ = Arange(g, 0, kContext, 1, DType::kInt64);
    return absl::OkStatus();
  }

  // tokens: int64 (B, kContext) -> logits (B, kContext, vocab).
  Value operator()(Value tokens) const {
    Value x = wte_(tokens) + wpe_(positions_);
    for (const nn::TransformerBlock& block : blocks_) x = block(x);
    return MatMul(ln_f_(x), wte_.weight(), {.transpose_b = true});
  }

 private:
  nn::Embedding wte_, wpe_;
  nn::TransformerBlock blocks_[kLayers];
  nn::LayerNorm ln_f_;
  Value positions_;
};

// Trains on random windows of the text; returns the last step's loss after printing a
// greedy continuation of the text's first line.
absl::StatusOr<float> TrainAndSample(int steps) {
  const std::string text = kText;
  std::string chars = text;
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  std::vector<int64_t> ids;
  for (char c : text) ids.push_back(chars.find(c));
  const int64_t vocab = chars.size();

  Graph g;
  Value tokens = g.Input("tokens", DType::kInt64, {kBatch, kContext});
  Value targets = g.Input("targets", DType::kInt64, {kBatch, kContext});
  Value prompt = g.Input("prompt", DType::kInt64, {1, kContext});
  Gpt gpt;
  DAGRAD_RETURN_IF_ERROR(gpt.Init(g, vocab));
  Value loss = CrossEntropy(gpt(tokens), targets);
  Value next = ArgMax(gpt(prompt), -1);  // the same weights; greedy, inside the graph
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep step, BuildTrainingStep(loss,  // decay matrices only
      DecayMatrices(g.Parameters(), 0.01), {.kind = OptimizerKind::kAdamW, .clip_norm = 1.0}));
  Executor exec(g);  // GPT-2's init: N(0, 0.02), residual projections / sqrt(2 layers)
  DAGRAD_RETURN_IF_ERROR(models::InitGpt2(exec, g.Parameters(), kLayers));
  DAGRAD_ASSIGN_OR_RETURN(auto train, exec.Compile({loss}, step.updates));
  DAGRAD_ASSIGN_OR_RETURN(auto sample, exec.Compile({next}));

  std::mt19937 rng(0);
  float last = 0;
  for (int t = 1; t <= steps; ++t) {
    std::vector<int64_t> x, y;  // kBatch windows and the characters that follow each one
    for (int64_t b = 0; b < kBatch; ++b) {
      const int64_t start = rng() % (ids.size() - kContext);
      x.insert(x.end(), ids.begin() + start, ids.begin() + start + kContext);
      y.insert(y.end(), ids.begin() + start + 1, ids.begin() + start + kContext + 1);
    }
    DAGRAD_ASSIGN_OR_RETURN(Tensor xs, Tensor::FromVector<int64_t>({kBatch, kContext}, x));
    DAGRAD_ASSIGN_OR_RETURN(Tensor ys, Tensor::FromVector<int64_t>({kBatch, kContext}, y));
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*train, {{tokens, xs}, {targets, ys},
        {step.lr, Tensor::Scalar(3e-3)}, {step.step, Tensor::Scalar(1.0 * t)}}));
    last = out[0].data<float>()[0];
    if (t % 50 == 0) std::printf("step %d: loss %.3f\n", t, last);
  }

  std::vector<int64_t> context(ids.begin(), ids.begin() + 8);  // "Shall I "
  while (static_cast<int64_t>(context.size()) < kContext) {
    std::vector<int64_t> window = context;
    window.resize(kContext, 0);  // positions after the context do not reach it (causal)
    DAGRAD_ASSIGN_OR_RETURN(Tensor w, Tensor::FromVector<int64_t>({1, kContext}, window));
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*sample, {{prompt, w}}));
    context.push_back(out[0].data<int64_t>()[context.size() - 1]);
  }
  std::string continued;
  for (int64_t id : context) continued += chars[id];
  std::printf("greedy: %s\n", continued.c_str());
  return last;
}

int main() {  // fails unless the loss falls below 1.0
  absl::StatusOr<float> loss = TrainAndSample(/*steps=*/300);
  std::printf("loss %.3f (%s)\n", loss.value_or(99), loss.status().ToString().c_str());
  return loss.value_or(99) < 1.0 ? 0 : 1;
}
