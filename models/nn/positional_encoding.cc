#include "models/nn/positional_encoding.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/shape_ops.h"

namespace dagrad::models {
namespace {

// Angles(i, j) = p_i / base^(2j/d) for the (L) float64 positions p as an
// (L, d/2) float64 subgraph.
Value Angles(Value positions, int64_t dim, double base) {
  if (!positions.ok()) return positions;
  Graph& g = *positions.graph();
  const int64_t length = positions.dim(0);
  Value two_j = Arange(g, 0, static_cast<double>(dim), 2, DType::kFloat64);  // 2j
  Value inv_freq = Exp(Scale(two_j, -std::log(base) / static_cast<double>(dim)));
  return Mul(Reshape(positions, {length, 1}), Reshape(inv_freq, {1, dim / 2}));
}

// Positions start, ..., start + length - 1 as float64 (length).
Value Positions(Graph& g, int64_t start, int64_t length) {
  return Arange(g, static_cast<double>(start),
                static_cast<double>(start) + static_cast<double>(length), 1, DType::kFloat64);
}

// Interleave returns [a0, b0, a1, b1, ...] along the last axis from two
// (..., n) values.
Value Interleave(Value a, Value b) {
  if (!a.ok() || !b.ok()) return a.ok() ? b : a;
  std::vector<int64_t> pair_shape(a.shape().dims().begin(), a.shape().dims().end());
  pair_shape.push_back(1);
  std::vector<int64_t> merged(a.shape().dims().begin(), a.shape().dims().end());
  merged.back() *= 2;
  return Reshape(Concat({Reshape(a, pair_shape), Reshape(b, pair_shape)}, -1), merged);
}

// CheckRotary: the error ApplyRotary returns for x or base, or null.
Value CheckRotary(Value x, double base) {
  Graph& g = *x.graph();
  if (x.rank() < 2 || x.dim(-1) % 2 != 0) {
    return g.Error(absl::InvalidArgumentError(absl::StrCat(
        "rotary embedding needs x (..., L, D) with D even, got ", x.shape().ToString())));
  }
  if (!(base > 0) || !std::isfinite(base)) {
    return g.Error(absl::InvalidArgumentError(
        absl::StrCat("rotary embedding needs a finite base > 0, got ", base)));
  }
  return Value();
}

// Rotate rotates x's pairs by `angles` (L, D/2).
Value Rotate(Value x, Value angles) {
  if (!angles.ok()) return angles;
  Value cos = Cast(Cos(angles), x.dtype()), sin = Cast(Sin(angles), x.dtype());
  // Split x into its even (x0) and odd (x1) members of each pair.
  std::vector<int64_t> pairs(x.shape().dims().begin(), x.shape().dims().end());
  pairs.back() /= 2;
  pairs.push_back(2);
  Value xp = Reshape(x, pairs);
  std::vector<int64_t> halves(pairs.begin(), pairs.end() - 1);
  Value x0 = Reshape(Slice(xp, -1, 0, 1), halves);
  Value x1 = Reshape(Slice(xp, -1, 1, 2), halves);
  return Interleave(x0 * cos - x1 * sin, x0 * sin + x1 * cos);
}

}  // namespace

Value SinusoidalTable(Graph& g, int64_t max_len, int64_t dim, DType dtype) {
  if (max_len < 1 || dim < 2 || dim % 2 != 0) {
    return g.Error(absl::InvalidArgumentError(absl::StrCat(
        "sinusoidal positional encoding needs max_len >= 1 and an even dim >= 2, got max_len ",
        max_len, ", dim ", dim)));
  }
  Graph::Scope scope(g, "sinusoidal_table");
  Value angles = Angles(Positions(g, 0, max_len), dim, 10000.0);
  return Cast(Interleave(Sin(angles), Cos(angles)), dtype);
}

Value AddSinusoidal(Value x, double dropout) {
  if (!x.ok()) return x;
  Graph& g = *x.graph();
  Graph::Scope scope(g, "positional_encoding");
  if (x.rank() != 3) {
    return g.Error(absl::InvalidArgumentError(absl::StrCat(
        "AddSinusoidal: x must be (B, T, E), got ", x.shape().ToString())));
  }
  Value y = Add(x, SinusoidalTable(g, x.dim(1), x.dim(2), x.dtype()));
  return dropout > 0 ? Dropout(y, dropout) : y;
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(Graph& g, absl::string_view name,
                                                       int64_t max_len, int64_t dim,
                                                       DType dtype) {
  Graph::Scope scope(g, name);
  weight_ = g.Parameter("weight", {max_len, dim}, Initializer::Normal(0.0, 0.02), dtype);
}

Value LearnedPositionalEmbedding::operator()(Value x) const {
  if (!x.ok() || !weight_.ok()) return x.ok() ? weight_ : x;
  if (x.rank() != 3 || x.dim(2) != weight_.dim(1) || x.dim(1) > weight_.dim(0)) {
    return x.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "learned positional embedding ", weight_.shape().ToString(), " cannot add to x ",
        x.shape().ToString())));
  }
  return Add(x, Slice(weight_, 0, 0, x.dim(1)));
}

Value ApplyRotary(Value x, double base, int64_t start) {
  if (!x.ok()) return x;
  if (Value error = CheckRotary(x, base); !error.is_null()) return error;
  Graph& g = *x.graph();
  // float64 holds every position exactly up to 2^53.
  constexpr int64_t kExact = int64_t{1} << 53;
  if (start < -kExact || start > kExact - x.dim(-2)) {
    return g.Error(absl::InvalidArgumentError(absl::StrCat(
        "rotary embedding's positions ", start, " to ", start, " + ", x.dim(-2),
        " - 1 must lie within +-2^53 (float64 holds them exactly)")));
  }
  Graph::Scope scope(g, "rotary");
  return Rotate(x, Angles(Positions(g, start, x.dim(-2)), x.dim(-1), base));
}

Value ApplyRotary(Value x, Value positions, double base) {
  if (!x.ok()) return x;
  if (!positions.ok()) return positions;
  if (Value error = CheckRotary(x, base); !error.is_null()) return error;
  Graph& g = *x.graph();
  if (positions.dtype() != DType::kInt64 || positions.shape() != Shape({x.dim(-2)})) {
    return g.Error(absl::InvalidArgumentError(absl::StrCat(
        "rotary embedding of x ", x.shape().ToString(), " needs int64 positions (",
        x.dim(-2), "), got ", DTypeName(positions.dtype()), " ",
        positions.shape().ToString())));
  }
  Graph::Scope scope(g, "rotary");
  return Rotate(x, Angles(Cast(positions, DType::kFloat64), x.dim(-1), base));
}

}  // namespace dagrad::models
