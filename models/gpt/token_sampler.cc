#include "models/gpt/token_sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/cumsum.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/sampling.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"

namespace dagrad::models {

absl::Status CheckSampling(const SamplingOptions& o) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling: temperature must be finite and >= 0, got ", o.temperature));
  }
  if (o.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling: top_k must be >= 0, got ", o.top_k));
  }
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling: top_p must be in (0, 1], got ", o.top_p));
  }
  return absl::OkStatus();
}

namespace {

// Nucleus zeroes the sorted probabilities (1, k) after the fewest whose
// sum reaches top_p: p_i is kept iff the mass before it is below top_p.
// A top_p under float's least positive value would round to 0 and keep
// nothing; that value keeps the first alone, as any tiny top_p does.
Value Nucleus(Value probs, double top_p) {
  Graph& g = *probs.graph();
  Value before = CumSum(probs, -1, {.exclusive = true});
  Value kept = Less(before, Fill(g, {1}, std::max(top_p, double{FLT_TRUE_MIN}), probs.dtype()));
  return Where(kept, probs, Fill(g, {1}, 0.0, probs.dtype()));
}

// KeepTopK keeps `shifted` where the sorted logits `sorted` are not below
// the k-th largest, -inf elsewhere: ties with the k-th are kept, as Hugging
// Face's TopKLogitsWarper keeps them.
Value KeepTopK(Value sorted, Value shifted, int64_t k) {
  Graph& g = *sorted.graph();
  Value below = Less(sorted, Slice(sorted, -1, k - 1, k));
  return Where(below, Fill(g, {1}, -INFINITY, shifted.dtype()), shifted);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenSampler>> TokenSampler::Create(
    int64_t vocab, const SamplingOptions& o, std::unique_ptr<Device> device) {
  DAGRAD_RETURN_IF_ERROR(CheckSampling(o));
  if (vocab < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sampling: vocab must be >= 1, got ", vocab));
  }
  std::unique_ptr<TokenSampler> s(new TokenSampler());
  s->vocab_ = vocab;
  Graph& g = s->graph_;
  s->logits_ = g.Input("logits", DType::kFloat32, {1, vocab});
  if (o.temperature == 0) {
    s->next_ = ArgMax(s->logits_, -1);  // (1)
  } else {
    TopKResult top = TopK(s->logits_, vocab, -1);  // (1, vocab), largest first
    // Shifted so that the largest is 0, scaled by at most the largest float:
    // a temperature near 0 then draws the greedy token, where logits /
    // temperature would overflow to inf - inf = NaN. Scaled by at least the
    // least normal float: a huge temperature then draws the kept tokens
    // alike, where a scale that rounds to 0 made top_k's -inf * 0 = NaN.
    Value shifted = Sub(top.values, Slice(top.values, -1, 0, 1));
    if (o.top_k > 0 && o.top_k < vocab) shifted = KeepTopK(top.values, shifted, o.top_k);
    const double inverse = std::clamp(1.0 / o.temperature, double{FLT_MIN}, double{FLT_MAX});
    Value probs = Softmax(Scale(shifted, inverse));
    if (o.top_p < 1) probs = Nucleus(probs, o.top_p);
    Value drawn = Multinomial(probs, o.seed);
    s->next_ = Gather(Reshape(top.indices, {vocab}), Reshape(drawn, {1}), 0);  // (1)
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  s->exec_ = std::make_unique<Executor>(g, std::move(device));
  DAGRAD_ASSIGN_OR_RETURN(s->plan_, s->exec_->Compile({s->next_}));
  return s;
}

absl::StatusOr<int64_t> TokenSampler::Sample(absl::Span<const float> logits, uint64_t draw) {
  if (static_cast<int64_t>(logits.size()) != vocab_) {
    return absl::InvalidArgumentError(absl::StrCat("sampling: expected ", vocab_,
                                                   " logits, got ", logits.size()));
  }
  DAGRAD_ASSIGN_OR_RETURN(
      Tensor row,
      Tensor::FromVector<float>({1, vocab_}, std::vector<float>(logits.begin(), logits.end())));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          exec_->Run(*plan_, {{logits_, row}}, {.step = draw}));
  return out[0].data<int64_t>()[0];
}

}  // namespace dagrad::models
