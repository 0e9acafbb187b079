// engine/initializer.h
//
// Initializer: how a variable (parameter or optimizer state) gets its first
// value. Random initializers draw from Philox4x32-10 keyed on the seed (the
// initializer's own when given, else the executor's) and the variable's full
// path, so the same seed and the same names give the same numbers regardless
// of the order in which the graph was built.
//
//   g.Parameter("weight", {out, in}, Initializer::XavierUniform());
//   g.Parameter("bias", {out}, Initializer::Zeros());
//   g.Parameter("table", {V, E}, Initializer::Normal(0.0, 0.1).WithSeed(7));
//
// TruncatedNormal is torch.nn.init.trunc_normal_ (absolute bounds):
//   Graph g;
//   g.Parameter("pos", {64, 128}, Initializer::TruncatedNormal(0.0, 0.02, -0.04, 0.04));
//
// engine/random_tensor.h draws whole tensors from them (RandomNormal, ...)
// and re-draws an executor's parameters by name (InitParameters).

#ifndef DAGRAD_ENGINE_INITIALIZER_H_
#define DAGRAD_ENGINE_INITIALIZER_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "engine/dtype.h"
#include "engine/shape.h"
#include "engine/tensor.h"

namespace dagrad {

struct Initializer {
  enum class Kind {
    kZeros, kOnes, kConstant, kUniform, kNormal, kTruncatedNormal,
    kXavierUniform, kXavierNormal, kKaimingUniform, kKaimingNormal
  };
  // Fan: which of a weight's fans a Kaiming init keeps the variance of:
  // kIn the forward pass's (PyTorch's mode='fan_in'), kOut the backward's.
  enum class Fan { kIn, kOut };

  static Initializer Zeros() { return {Kind::kZeros}; }
  static Initializer Ones() { return {Kind::kOnes}; }
  static Initializer Constant(double value) { return {Kind::kConstant, value}; }
  // Uniform draws from [low, high).
  static Initializer Uniform(double low, double high) {
    return {Kind::kUniform, low, high};
  }
  static Initializer Normal(double mean, double stddev) {
    return {Kind::kNormal, mean, stddev};
  }
  // TruncatedNormal draws from N(mean, stddev) restricted to [low, high]:
  // torch.nn.init.trunc_normal_, whose bounds are absolute values, not
  // multiples of stddev (so its defaults, -2 and 2, are these). It inverts
  // the normal CDF (as PyTorch does), so every draw takes the same time,
  // however little mass the bounds hold.
  static Initializer TruncatedNormal(double mean, double stddev, double low = -2.0,
                                     double high = 2.0) {
    return {Kind::kTruncatedNormal, mean, stddev, low, high};
  }
  // XavierUniform draws from U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)),
  // with fans computed as PyTorch does: for (out, in, k...) shapes,
  // fan_in = in * prod(k), fan_out = out * prod(k).
  static Initializer XavierUniform(double gain = 1.0) {
    return {Kind::kXavierUniform, gain};
  }
  // XavierNormal draws from N(0, std²), std = gain * sqrt(2 / (fan_in + fan_out)).
  static Initializer XavierNormal(double gain = 1.0) { return {Kind::kXavierNormal, gain}; }
  // KaimingUniform draws from U(-a, a), a = gain * sqrt(3 / fan), and
  // KaimingNormal from N(0, std²), std = gain / sqrt(fan): torch.nn.init's
  // kaiming_uniform_ and kaiming_normal_, with fan = fan_in or fan_out as
  // above. PyTorch's calculate_gain gives the gain: 1 for linear and
  // sigmoid, 5/3 for tanh, LeakyReluGain(0) = sqrt(2) for ReLU (the default,
  // as PyTorch's a=0), LeakyReluGain(a) for a leaky ReLU of slope a.
  //
  //   g.Parameter("conv", {64, 32, 3, 3}, Initializer::KaimingNormal());   // He, fan_in
  //   g.Parameter("w", {16, 8}, Initializer::KaimingUniform(Initializer::LeakyReluGain(0.2),
  //                                                          Initializer::Fan::kOut));
  static Initializer KaimingUniform(double gain = LeakyReluGain(0), Fan fan = Fan::kIn) {
    return {.kind = Kind::kKaimingUniform, .a = gain, .fan = fan};
  }
  static Initializer KaimingNormal(double gain = LeakyReluGain(0), Fan fan = Fan::kIn) {
    return {.kind = Kind::kKaimingNormal, .a = gain, .fan = fan};
  }
  // LeakyReluGain(slope) = sqrt(2 / (1 + slope²)), calculate_gain('leaky_relu', slope).
  static double LeakyReluGain(double negative_slope) {
    return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
  }
  // WithSeed fixes the seed instead of taking the executor's.
  Initializer WithSeed(uint64_t s) const {
    Initializer copy = *this;
    copy.seed = s;
    return copy;
  }
  // WithZeroRow fills as before, then zeroes row `row` (index into axis 0):
  // an embedding's padding row, as torch.nn.Embedding(padding_idx=row).
  Initializer WithZeroRow(int64_t row) const {
    Initializer copy = *this;
    copy.zero_row = row;
    return copy;
  }

  // Validate returns InvalidArgument, naming them, for bad parameters (high
  // < low, negative stddev, a gain that is not finite and >= 0, a Xavier or
  // Kaiming init of a tensor with rank < 2, a zero row outside axis 0; for a
  // truncated normal, stddev <= 0, low >= high, or bounds that hold no mass
  // a double can represent, such as [100, 101] for N(0, 1)), a
  // random kind for a dtype that is not floating, and a constant `dtype`
  // cannot hold: the values the Fill op rejects (CheckValueFits in
  // engine/dtype.h: 1.5 or 3e9 for int32, 2 for bool; float dtypes take inf
  // and NaN, as torch.nn.init.constant_ does).
  //
  //   absl::Status s = Initializer::Constant(3e9).Validate({2}, DType::kInt32);  // InvalidArgument
  absl::Status Validate(const Shape& shape, DType dtype) const;

  // Fill writes the initial values into `out` (any float dtype, each value
  // drawn in double and rounded once, so a bfloat16 parameter starts at
  // the nearest bfloat16 of its float64 draw, except that a draw that
  // rounds past a bound takes the nearest value within it, so that a
  // uniform's [low, high) and a truncated normal's [low, high] hold in
  // every dtype; the constant kinds also fill
  // integer and bool tensors). `path` keys the random stream. The errors of Validate, except those about the shape.
  absl::Status Fill(uint64_t default_seed, const std::string& path,
                    Tensor& out) const;

  // ToString describes the initializer, e.g. "normal(0, 0.1)".
  std::string ToString() const;

  Kind kind = Kind::kZeros;
  double a = 0;  // constant value, low, mean or gain
  double b = 0;  // high or stddev
  double c = 0, d = 0;  // a truncated normal's low and high
  std::optional<uint64_t> seed;
  Fan fan = Fan::kIn;    // a Kaiming init's
  std::optional<int64_t> zero_row;

 private:
  // FillAll is Fill without the zero row.
  absl::Status FillAll(uint64_t default_seed, const std::string& path, Tensor& out) const;
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_INITIALIZER_H_
