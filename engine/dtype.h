// engine/dtype.h
//
// Element types of dagrad tensors. float32 carries values; float64 exists so
// that finite-difference gradient checks are exact enough to mean something;
// int32/int64 carry indices, lengths and targets; bool carries keep-masks
// (stored as one byte per element, 0 or 1).

#ifndef DAGRAD_ENGINE_DTYPE_H_
#define DAGRAD_ENGINE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dagrad {

enum class DType : uint8_t { kFloat32, kFloat64, kInt32, kInt64, kBool };

// SizeOf returns the bytes one element of `dtype` occupies.
size_t SizeOf(DType dtype);

// DTypeName returns "float32", "float64", "int32", "int64" or "bool".
absl::string_view DTypeName(DType dtype);

// DTypeFromName parses the names DTypeName returns.
std::optional<DType> DTypeFromName(absl::string_view name);

// IsFloating is true for float32 and float64.
inline bool IsFloating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64;
}
// IsInteger is true for int32 and int64.
inline bool IsInteger(DType d) {
  return d == DType::kInt32 || d == DType::kInt64;
}

// CheckValueFits returns OK when `dtype` can hold `value` exactly, or
// InvalidArgument naming `what`, the value and the dtype: for int32 and
// int64 a value that is not an integer (NaN included) or outside the
// dtype's range (inf included); for bool anything but 0 and 1; for float32
// a finite value beyond its range (rounding is expected, and inf and NaN
// are float values). Whatever turns a double into an element — the Fill
// and Arange ops, Initializer::Constant — checks it here, so that the
// conversion is defined and they all accept the same values.
//
//   absl::Status s = CheckValueFits(3e9, DType::kInt32, "value");  // InvalidArgument: out of range
absl::Status CheckValueFits(double value, DType dtype, absl::string_view what);

// CheckIntegerFits is CheckValueFits for an integer, which never passes
// through a double: InvalidArgument for int32 outside its range and for bool
// anything but 0 and 1; every int64 fits int64, and the floats round it.
//
//   absl::Status s = CheckIntegerFits(int64_t{1} << 40, DType::kInt32, "value");  // out of range
absl::Status CheckIntegerFits(int64_t value, DType dtype, absl::string_view what);

// DTypeOf<T>::value maps a C++ element type to its DType.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DTYPE_H_
