// ops/sampling.h
//
// Sampling ops, for generation inside the graph: ArgMax (greedy decoding),
// TopK (top-k filtering) and Multinomial (drawing from softmax
// probabilities). None is differentiable: gradients stop at them, which is
// not an error (engine/op.h). Each runs on the CPU and on CUDA with the
// same results, draws included.
//
//   // setup: Sampling
//   Value probs = Softmax(logits);                  // (B, V)
//   Value greedy = ArgMax(logits, -1);              // (B,) int64
//   TopKResult top = TopK(logits, 5, -1);           // (B, 5) values and indices
//   Value next = Multinomial(probs, /*seed=*/42);   // (B, 1) int64
//
// Multinomial draws afresh at each run step (RunOptions::step; at every run
// that sets none).
//
// Errors (in the returned Value): a 0-d or bool input, an axis out of
// range, ArgMax over an empty axis, k outside [0, n], non-float probs.

#ifndef DAGRAD_OPS_SAMPLING_H_
#define DAGRAD_OPS_SAMPLING_H_

#include <cstdint>

#include "engine/graph.h"

namespace dagrad {

// ArgMax returns the index of the largest element along `axis` (negative
// counts from the end), int64, with that axis removed: x (..., n, ...) ->
// (..., ...), any numeric dtype. As torch.argmax: the first maximum on
// ties, and NaN counts as larger than every number (the first NaN wins).
Value ArgMax(Value x, int64_t axis = -1);

// TopKResult: the k largest elements along the axis, largest first, and
// their int64 indices into it.
struct TopKResult {
  Value values;   // x's dtype, the axis of size k
  Value indices;  // int64, the same shape
};

// TopK returns the k largest elements along `axis`, sorted descending (NaN
// first, as torch), any numeric dtype, 0 <= k <= n. Equal values come in
// ascending index order (torch.sort(descending=True, stable=True)'s order;
// torch.topk leaves the order of ties unspecified).
TopKResult TopK(Value x, int64_t k, int64_t axis = -1);

// Multinomial draws one index per row of probs (..., n), float, in
// proportion to the row's values, which need not sum to 1: int64 (..., 1),
// as torch.multinomial(probs, 1). Row r's draw is u = 53 bits of the
// Philox block r of RandomStream{seed, kMultinomialStream, run step}
// (engine/philox.h): the first index whose running sum (in double, in
// order) exceeds u times the row's sum. So it is a pure function of seed,
// the run's step (RunOptions::step) and the row, the same on CPU and CUDA.
// A row with a negative, NaN or infinite value, or a zero sum, fails the
// run with an error naming it.
Value Multinomial(Value probs, uint64_t seed);

// The stream word of Multinomial's draws ("mult").
inline constexpr uint32_t kMultinomialStream = 0x6d756c74;

}  // namespace dagrad

#endif  // DAGRAD_OPS_SAMPLING_H_
