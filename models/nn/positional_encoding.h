// models/nn/positional_encoding.h
//
// Position information for attention models, built from graph ops.
//
// Sinusoidal (interleaved, as d2l and the seed notebooks):
//   P[i, 2j] = sin(i / 10000^(2j/d)),  P[i, 2j+1] = cos(i / 10000^(2j/d))
// The table is a subgraph (arange, scaling, sin, cos, interleave) with no
// inputs, so the planner folds it into a constant once per plan. It is
// computed in float64 and cast to the requested dtype. An odd d is an error:
// the pairs (sin, cos) would leave the last column without a partner, and
// silently dropping or inventing it would not match any reference.
//
//   Value pe = SinusoidalTable(g, /*max_len=*/T, /*dim=*/E);   // (T, E)
//   Value x1 = AddSinusoidal(x, /*dropout=*/0.1);              // x + P[:T], dropout
//
// Learned: a parameter table (max_len, E), N(0, 0.02), added to x.
// Rotary (RoPE, adjacent pairs): for pair (x[2j], x[2j+1]) at position i,
//   rotate by angle i / base^(2j/d): (x0 cos - x1 sin, x0 sin + x1 cos).

#ifndef DAGRAD_MODELS_NN_POSITIONAL_ENCODING_H_
#define DAGRAD_MODELS_NN_POSITIONAL_ENCODING_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "engine/graph.h"

namespace dagrad::models {

// SinusoidalTable returns the (max_len, dim) table above. Error Values for
// max_len < 1, dim < 2 or dim odd.
Value SinusoidalTable(Graph& g, int64_t max_len, int64_t dim,
                      DType dtype = DType::kFloat32);

// AddSinusoidal returns dropout(x + P[:T]) for x (B, T, E), under scope
// "positional_encoding".
Value AddSinusoidal(Value x, double dropout = 0.0);

// LearnedPositionalEmbedding holds a (max_len, E) parameter table named
// `name` + "/weight".
class LearnedPositionalEmbedding {
 public:
  LearnedPositionalEmbedding(Graph& g, absl::string_view name, int64_t max_len, int64_t dim,
                             DType dtype = DType::kFloat32);
  // Returns x + table[:T] for x (B, T, E); an error Value when T > max_len.
  Value operator()(Value x) const;
  Value weight() const { return weight_; }

 private:
  Value weight_;
};

// ApplyRotary rotates adjacent pairs of x (..., L, D) by position along
// axis -2: positions start, ..., start + L - 1. A block of queries that
// continues a sequence (new tokens after cached keys) passes the number of
// tokens before it as `start`, so that it rotates as it would have in the
// whole sequence. Error Value for an odd D, or a base that is not finite
// and > 0 (it would make every value NaN).
//
//   Value k = ApplyRotary(keys);                  // (B, H, S, Dh), positions 0..S-1
//   Value q = ApplyRotary(queries, 10000, S - T); // (B, H, T, Dh), positions S-T..S-1
Value ApplyRotary(Value x, double base = 10000.0, int64_t start = 0);

// ApplyRotary rotates x (..., L, D) at the positions an int64 (L) Value
// holds when the graph runs: a cached block's new tokens, whose position
// is fed at each step. Errors as above, and for positions of another dtype
// or shape.
//
//   Value at = Arange(g, 3, 3 + T, 1, DType::kInt64);   // positions 3, ..., T + 2
//   Value q = ApplyRotary(queries, at);                  // (B, H, T, Dh)
Value ApplyRotary(Value x, Value positions, double base = 10000.0);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_NN_POSITIONAL_ENCODING_H_
