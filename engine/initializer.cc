#include "engine/initializer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/philox.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

constexpr double kTwoPi = 6.283185307179586;

// Fans as torch.nn.init._calculate_fan_in_and_fan_out computes them.
void Fans(const Shape& shape, double* fan_in, double* fan_out) {
  double receptive = 1;
  for (int i = 2; i < shape.rank(); ++i) receptive *= shape[i];
  *fan_in = shape[1] * receptive;
  *fan_out = shape[0] * receptive;
}

// The standard normal CDF, and its inverse: Acklam's rational approximation
// (relative error 1.2e-9) refined by one Halley step to double precision.
double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double NormalQuantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00, 2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  double x;
  if (p < 0.02425) {
    x = tail(std::sqrt(-2 * std::log(p)));
  } else if (p > 1 - 0.02425) {
    x = -tail(std::sqrt(-2 * std::log1p(-p)));
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double u = (NormalCdf(x) - p) * std::sqrt(kTwoPi) * std::exp(x * x / 2);
  return std::isfinite(u) ? x - u / (1 + x * u / 2) : x;  // deep in the tail: exp overflows
}

// TruncatedBounds maps [low, high] to standard units, mirrored into the
// lower tail when the interval lies mostly above the mean, where the CDF
// keeps its precision (1 - Φ(8) is 0 in double; Φ(-8) is not).
struct TruncatedBounds {
  double lo, hi;      // standard units, after mirroring
  double cdf_lo, cdf_hi;
  double sign;        // -1 when mirrored
};

TruncatedBounds StandardBounds(const Initializer& init) {
  double lo = (init.c - init.a) / init.b, hi = (init.d - init.a) / init.b, sign = 1;
  if (lo + hi > 0) {
    std::swap(lo, hi);
    lo = -lo;
    hi = -hi;
    sign = -1;
  }
  return {lo, hi, NormalCdf(lo), NormalCdf(hi), sign};
}

// TruncatedDraw inverts the CDF at a uniform u in [0, 1), as PyTorch's
// trunc_normal_ does (there through erfinv), and clamps the rounding.
double TruncatedDraw(const Initializer& init, const TruncatedBounds& t, double u) {
  const double p = t.cdf_lo + u * (t.cdf_hi - t.cdf_lo);
  const double z = p > 0 ? std::clamp(NormalQuantile(p), t.lo, t.hi) : t.lo;
  return std::clamp(init.a + init.b * t.sign * z, init.c, init.d);
}

bool IsFanScaled(Initializer::Kind kind) {
  using Kind = Initializer::Kind;
  return kind == Kind::kXavierUniform || kind == Kind::kXavierNormal ||
         kind == Kind::kKaimingUniform || kind == Kind::kKaimingNormal;
}

// Drawn is what a random initializer draws from once the shape is known:
// U[low, high), or N(mean, stddev²), or the truncated normal.
struct Drawn {
  Initializer::Kind kind;  // kUniform, kNormal or kTruncatedNormal
  double low_or_mean, high_or_stddev;
};

// Resolve turns a fan-scaled init into the uniform or normal it is for
// `shape` (torch.nn.init's formulas, header).
Drawn Resolve(const Initializer& init, const Shape& shape) {
  using Kind = Initializer::Kind;
  if (!IsFanScaled(init.kind)) return {init.kind, init.a, init.b};
  double fan_in, fan_out;
  Fans(shape, &fan_in, &fan_out);
  const double fan = init.fan == Initializer::Fan::kIn ? fan_in : fan_out;
  switch (init.kind) {
    case Kind::kXavierUniform: {
      const double bound = init.a * std::sqrt(6.0 / (fan_in + fan_out));
      return {Kind::kUniform, -bound, bound};
    }
    case Kind::kXavierNormal:
      return {Kind::kNormal, 0.0, init.a * std::sqrt(2.0 / (fan_in + fan_out))};
    case Kind::kKaimingUniform: {
      const double bound = std::sqrt(3.0) * (init.a / std::sqrt(fan));  // PyTorch's order
      return {Kind::kUniform, -bound, bound};
    }
    default:  // kKaimingNormal
      return {Kind::kNormal, 0.0, init.a / std::sqrt(fan)};
  }
}

// Step is the T next to t, up or down.
template <typename T>
T Step(T t, bool up) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(t, up ? std::numeric_limits<T>::infinity()
                                : -std::numeric_limits<T>::infinity());
  } else {  // BFloat16, Float16: a sign bit and the magnitude's bits
    const bool negative = t.bits & 0x8000u;
    if ((t.bits & 0x7fffu) == 0) {
      t.bits = up ? 0x0001u : 0x8001u;  // past +-0: the value of least magnitude
    } else if (negative == up) {
      --t.bits;  // toward 0
    } else {
      ++t.bits;
    }
    return t;
  }
}

// DrawBounds are the least and the greatest T a draw on [low, high)
// (uniform; [low, high] when `high_included`, truncated normal) may give: a
// draw rounded past a bound takes it, so the bounds hold in every dtype
// (a bfloat16 draw from [0, 1) rounded to 1.0 in 1 of 512, and one from
// [-0.1, 0.1) to -0.10009765625), as torch's uniform_ keeps them.
template <typename T>
struct DrawBounds {
  DrawBounds(double low, double high, bool high_included) : low(low), high(high) {
    least = ConvertElement<T>(low);
    if (ConvertElement<double>(least) < low) least = Step(least, /*up=*/true);
    greatest = ConvertElement<T>(high);
    const double g = ConvertElement<double>(greatest);
    if (high_included ? g > high : g >= high) greatest = Step(greatest, /*up=*/false);
  }
  T Clamp(double x) const {
    const T t = ConvertElement<T>(x);
    const double v = ConvertElement<double>(t);
    return v < low ? least : v > ConvertElement<double>(greatest) ? greatest : t;
  }
  double low, high;
  T least, greatest;
};

template <typename T>
void FillRandom(const Initializer& init, const RandomStream& rs, Tensor& out) {
  T* p = out.data<T>();
  const int64_t n = out.num_elements();
  const Drawn drawn = Resolve(init, out.shape());
  const TruncatedBounds truncated =
      init.kind == Initializer::Kind::kTruncatedNormal ? StandardBounds(init) : TruncatedBounds{};
  const double low = drawn.low_or_mean, high = drawn.high_or_stddev;  // when uniform
  const DrawBounds<T> uniform(low, std::max(low, high), /*high_included=*/low == high);
  const DrawBounds<T> kept(init.c, init.d, /*high_included=*/true);  // when truncated
  for (int64_t i = 0; i < n; ++i) {
    const PhiloxBlock r = rs.Block(static_cast<uint64_t>(i));
    // 53-bit uniform doubles from two 32-bit words.
    const double u0 = ((static_cast<uint64_t>(r.v[0]) << 21) ^ (r.v[1] >> 11)) *
                      (1.0 / 9007199254740992.0);
    if (drawn.kind == Initializer::Kind::kTruncatedNormal) {
      p[i] = kept.Clamp(TruncatedDraw(init, truncated, u0));
    } else if (drawn.kind == Initializer::Kind::kNormal) {
      const double u1 = ((static_cast<uint64_t>(r.v[2]) << 21) ^ (r.v[3] >> 11)) *
                        (1.0 / 9007199254740992.0);
      // Box-Muller; 1 - u0 lies in (0, 1] so the log is finite.
      const double z = std::sqrt(-2.0 * std::log(1.0 - u0)) * std::cos(kTwoPi * u1);
      p[i] = ConvertElement<T>(drawn.low_or_mean + drawn.high_or_stddev * z);
    } else {
      p[i] = uniform.Clamp(low + (high - low) * u0);
    }
  }
}

template <typename T>
void FillConstant(double value, Tensor& out) {
  T* p = out.data<T>();
  for (int64_t i = 0, count = out.num_elements(); i < count; ++i) p[i] = ConvertElement<T>(value);
}

bool IsRandom(Initializer::Kind kind) {
  using Kind = Initializer::Kind;
  return kind == Kind::kUniform || kind == Kind::kNormal || kind == Kind::kTruncatedNormal ||
         IsFanScaled(kind);
}

absl::Status ValidateTruncated(const Initializer& init) {
  const std::string what = absl::StrFormat("truncated_normal(mean %g, stddev %g, [%g, %g])",
                                           init.a, init.b, init.c, init.d);
  if (!std::isfinite(init.a) || !(init.b > 0) || !std::isfinite(init.b)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": needs a finite mean and a finite stddev > 0"));
  }
  if (!std::isfinite(init.c) || !std::isfinite(init.d) || !(init.c < init.d)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": needs finite bounds low < high"));
  }
  const TruncatedBounds t = StandardBounds(init);
  if (!(t.cdf_hi > t.cdf_lo)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the bounds [low, high] hold no probability mass a double can represent"));
  }
  return absl::OkStatus();
}

// CheckZeroRow: a zero row, when given, must index axis 0 of `shape`.
absl::Status CheckZeroRow(const std::optional<int64_t>& row, const Shape& shape) {
  if (!row || (shape.rank() >= 1 && *row >= 0 && *row < shape[0])) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the zero row ", *row,
                                                 " is outside axis 0 of shape ", shape.ToString()));
}

}  // namespace

absl::Status Initializer::Validate(const Shape& shape, DType dtype) const {
  if (absl::Status st = CheckZeroRow(zero_row, shape); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(ToString(), ": ", st.message()));
  }
  const bool random = IsRandom(kind);
  if (random && !IsAnyFloat(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random initializer ", ToString(), " needs a floating dtype, got ", DTypeName(dtype)));
  }
  switch (kind) {
    case Kind::kUniform:
      if (!(a <= b) || !std::isfinite(a) || !std::isfinite(b)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "uniform initializer needs finite low <= high, got [", a, ", ", b, ")"));
      }
      // Draws are low + (high - low) u: the width must be finite too, and
      // the bounds the dtype's (else every draw clamps to its largest).
      if (!std::isfinite(b - a) || (IsAnyFloat(dtype) && (std::abs(a) > LargestFinite(dtype) ||
                                                          std::abs(b) > LargestFinite(dtype)))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "uniform initializer [", a, ", ", b, ") must lie within ", DTypeName(dtype),
            "'s finite range, +-", LargestFinite(dtype), ", and be no wider than a double holds"));
      }
      break;
    case Kind::kNormal:
      if (!(b >= 0) || !std::isfinite(a) || !std::isfinite(b)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "normal initializer needs a finite mean and stddev >= 0, got mean ",
            a, ", stddev ", b));
      }
      break;
    case Kind::kTruncatedNormal:
      return ValidateTruncated(*this);
    case Kind::kXavierUniform:
    case Kind::kXavierNormal:
    case Kind::kKaimingUniform:
    case Kind::kKaimingNormal:
      if (shape.rank() < 2) {  // no fans (torch.nn.init refuses it too)
        return absl::InvalidArgumentError(absl::StrCat(
            ToString(), " needs a tensor of rank >= 2, got shape ", shape.ToString()));
      }
      if (!(a >= 0) || !std::isfinite(a)) {
        return absl::InvalidArgumentError(
            absl::StrCat(ToString(), ": the gain must be finite and >= 0, got ", a));
      }
      break;
    case Kind::kConstant:
      return CheckValueFits(a, dtype, "constant initializer value");
    case Kind::kZeros:
    case Kind::kOnes:
      break;
  }
  return absl::OkStatus();
}

absl::Status Initializer::Fill(uint64_t default_seed, const std::string& path,
                               Tensor& out) const {
  DAGRAD_RETURN_IF_ERROR(FillAll(default_seed, path, out));
  if (!zero_row) return absl::OkStatus();
  const Shape& shape = out.shape();
  if (absl::Status st = CheckZeroRow(zero_row, shape); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "': ", st.message()));
  }
  const size_t row_bytes = out.nbytes() / static_cast<size_t>(shape[0]);
  std::memset(static_cast<char*>(out.raw_data()) + *zero_row * row_bytes, 0, row_bytes);
  return absl::OkStatus();
}

absl::Status Initializer::FillAll(uint64_t default_seed, const std::string& path,
                                  Tensor& out) const {
  const bool random = IsRandom(kind);
  if (!random) {
    const double value = kind == Kind::kOnes ? 1.0 : kind == Kind::kConstant ? a : 0.0;
    // Fill may be called on an initializer never validated for this dtype;
    // the conversions below are defined only for values that fit.
    if (absl::Status st = CheckValueFits(value, out.dtype(), "constant initializer value");
        !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("'", path, "': ", st.message()));
    }
    switch (out.dtype()) {
      case DType::kFloat32: FillConstant<float>(value, out); break;
      case DType::kFloat64: FillConstant<double>(value, out); break;
      case DType::kInt32: FillConstant<int32_t>(value, out); break;
      case DType::kInt64: FillConstant<int64_t>(value, out); break;
      case DType::kBool: FillConstant<bool>(value != 0, out); break;
      case DType::kBFloat16: FillConstant<BFloat16>(value, out); break;
      case DType::kFloat16: FillConstant<Float16>(value, out); break;
    }
    return absl::OkStatus();
  }
  if (kind == Kind::kTruncatedNormal) {
    if (absl::Status st = ValidateTruncated(*this); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("'", path, "': ", st.message()));
    }
  }
  const uint64_t h = StableHash64(path.data(), path.size());
  const RandomStream rs{seed.value_or(default_seed), static_cast<uint32_t>(h),
                        static_cast<uint32_t>(h >> 32)};
  switch (out.dtype()) {
    case DType::kFloat32: FillRandom<float>(*this, rs, out); return absl::OkStatus();
    case DType::kFloat64: FillRandom<double>(*this, rs, out); return absl::OkStatus();
    case DType::kBFloat16: FillRandom<BFloat16>(*this, rs, out); return absl::OkStatus();
    case DType::kFloat16: FillRandom<Float16>(*this, rs, out); return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "random initializer ", ToString(), " of '", path,
          "' needs a floating dtype, got ", DTypeName(out.dtype())));
  }
}

std::string Initializer::ToString() const {
  std::string s;
  switch (kind) {
    case Kind::kZeros: s = "zeros"; break;
    case Kind::kOnes: s = "ones"; break;
    case Kind::kConstant: s = absl::StrFormat("constant(%g)", a); break;
    case Kind::kUniform: s = absl::StrFormat("uniform(%g, %g)", a, b); break;
    case Kind::kNormal: s = absl::StrFormat("normal(%g, %g)", a, b); break;
    case Kind::kXavierUniform: s = absl::StrFormat("xavier_uniform(gain=%g)", a); break;
    case Kind::kXavierNormal: s = absl::StrFormat("xavier_normal(gain=%g)", a); break;
    case Kind::kKaimingUniform:
    case Kind::kKaimingNormal:
      s = absl::StrFormat("kaiming_%s(gain=%g, %s)",
                          kind == Kind::kKaimingUniform ? "uniform" : "normal", a,
                          fan == Fan::kIn ? "fan_in" : "fan_out");
      break;
    case Kind::kTruncatedNormal:
      s = absl::StrFormat("truncated_normal(%g, %g, [%g, %g])", a, b, c, d);
      break;
  }
  if (seed) absl::StrAppend(&s, " seed=", *seed);
  if (zero_row) absl::StrAppend(&s, " zero_row=", *zero_row);
  return s;
}

}  // namespace dagrad
