#include "engine/dtype.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dagrad {

double LargestFinite(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16:
      return BFloat16ToFloat({0x7f7f});
    case DType::kFloat16:
      return Float16ToFloat({0x7bff});
    case DType::kFloat64:
      return std::numeric_limits<double>::max();
    default:
      return std::numeric_limits<float>::max();
  }
}

size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kBFloat16:
    case DType::kFloat16:
      return 2;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat16:
      return "float16";
  }
  return "?";
}

std::optional<DType> DTypeFromName(absl::string_view name) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

namespace {

// ReadDecimal reads `text` as the nearest T, whatever the C locale (a host
// program's decimal comma, say), as strtod would not.
bool ReadDecimal(const std::string& text, float* out) { return absl::SimpleAtof(text, out); }
bool ReadDecimal(const std::string& text, double* out) { return absl::SimpleAtod(text, out); }

// Shortest is the fewest significant digits that read back as `value` in
// T (NaN as "nan", whatever its sign bit). StrFormat ignores the locale too.
template <typename T>
std::string Shortest(T value) {
  if (std::isnan(value)) return "nan";
  for (int digits = 1; digits < 17; ++digits) {
    std::string text = absl::StrFormat("%.*g", digits, value);
    T back;
    if (ReadDecimal(text, &back) && back == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

}  // namespace

std::string ShortestDecimal(double value) {
  if (std::trunc(value) == value && std::abs(value) < 0x1p64) return absl::StrFormat("%.0f", value);
  return Shortest(value);
}

std::string ShortestDecimal(float value) { return Shortest(value); }

absl::Status CheckValueFits(double value, DType dtype, absl::string_view what) {
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", ShortestDecimal(value), " ", why,
                                                   " (dtype ", DTypeName(dtype), ")"));
  };
  switch (dtype) {
    case DType::kFloat64:
      return absl::OkStatus();
    case DType::kFloat32:
    case DType::kBFloat16:
    case DType::kFloat16:
      if (std::isfinite(value) && std::abs(value) > LargestFinite(dtype)) {
        return fail(absl::StrCat("is beyond ", DTypeName(dtype), "'s range"));
      }
      return absl::OkStatus();
    case DType::kBool:
      if (value != 0 && value != 1) return fail("is not 0 or 1");
      return absl::OkStatus();
    case DType::kInt32:
    case DType::kInt64: {
      if (std::trunc(value) != value) return fail("is not an integer");
      // -2^31 and -2^63 are exact doubles; the largest values are not.
      const double limit = std::ldexp(1.0, dtype == DType::kInt32 ? 31 : 63);
      if (value < -limit || value >= limit) return fail("is out of range");
      return absl::OkStatus();
    }
  }
  return absl::InternalError("bad dtype");
}

absl::Status CheckIntegerFits(int64_t value, DType dtype, absl::string_view what) {
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", value, " ", why, " (dtype ", DTypeName(dtype), ")"));
  };
  if (dtype == DType::kInt32 && (value < INT32_MIN || value > INT32_MAX)) {
    return fail("is out of range");
  }
  if (dtype == DType::kBool && value != 0 && value != 1) return fail("is not 0 or 1");
  return absl::OkStatus();
}

}  // namespace dagrad
