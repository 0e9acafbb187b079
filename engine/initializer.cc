#include "engine/initializer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/philox.h"

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

template <typename T>
void FillRandom(const Initializer& init, const RandomStream& rs, Tensor& out) {
  T* p = out.data<T>();
  const int64_t n = out.num_elements();
  double low = init.a, high = init.b;
  if (init.kind == Initializer::Kind::kXavierUniform) {
    double fan_in, fan_out;
    Fans(out.shape(), &fan_in, &fan_out);
    const double bound = init.a * std::sqrt(6.0 / (fan_in + fan_out));
    low = -bound;
    high = bound;
  }
  for (int64_t i = 0; i < n; ++i) {
    const PhiloxBlock r = rs.Block(static_cast<uint64_t>(i));
    // 53-bit uniform doubles from two 32-bit words.
    const double u0 = ((static_cast<uint64_t>(r.v[0]) << 21) ^ (r.v[1] >> 11)) *
                      (1.0 / 9007199254740992.0);
    if (init.kind == Initializer::Kind::kNormal) {
      const double u1 = ((static_cast<uint64_t>(r.v[2]) << 21) ^ (r.v[3] >> 11)) *
                        (1.0 / 9007199254740992.0);
      // Box-Muller; 1 - u0 lies in (0, 1] so the log is finite.
      const double z = std::sqrt(-2.0 * std::log(1.0 - u0)) * std::cos(kTwoPi * u1);
      p[i] = ConvertElement<T>(init.a + init.b * z);
    } else {
      p[i] = ConvertElement<T>(low + (high - low) * u0);
    }
  }
}

template <typename T>
void FillConstant(double value, Tensor& out) {
  T* p = out.data<T>();
  for (int64_t i = 0, count = out.num_elements(); i < count; ++i) p[i] = ConvertElement<T>(value);
}

}  // namespace

absl::Status Initializer::Validate(const Shape& shape, DType dtype) const {
  const bool random = kind == Kind::kUniform || kind == Kind::kNormal ||
                      kind == Kind::kXavierUniform;
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
      break;
    case Kind::kNormal:
      if (!(b >= 0) || !std::isfinite(a) || !std::isfinite(b)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "normal initializer needs a finite mean and stddev >= 0, got mean ",
            a, ", stddev ", b));
      }
      break;
    case Kind::kXavierUniform:
      if (shape.rank() < 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "xavier_uniform needs a tensor of rank >= 2, got shape ",
            shape.ToString()));
      }
      if (!(a >= 0) || !std::isfinite(a)) {
        return absl::InvalidArgumentError(
            absl::StrCat("xavier_uniform gain must be finite and >= 0, got ", a));
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
  const bool random = kind == Kind::kUniform || kind == Kind::kNormal ||
                      kind == Kind::kXavierUniform;
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
  }
  if (seed) absl::StrAppend(&s, " seed=", *seed);
  return s;
}

}  // namespace dagrad
