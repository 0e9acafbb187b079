// engine/dtype.h
//
// Element types of dagrad tensors. float32 carries values; float64 exists so
// that finite-difference gradient checks are exact enough to mean something;
// int32/int64 carry indices, lengths and targets; bool carries keep-masks
// (stored as one byte per element, 0 or 1).
//
// bfloat16 and float16 (IEEE binary16) are the 16-bit floats
// (engine/bfloat16.h has their storage types and rounding rules). They are
// formats to store and multiply in, not to compute everything in: an op
// takes them only where its OpDef says so (OpDef::reduced_floats), and the
// graph refuses them anywhere else when it is built (ops/op_util.h's
// BuildOp, naming the op and the ops that take them). Today:
//   bfloat16  casts from and to every dtype; the layout ops (reshape,
//             permute, broadcast_to, concat, slice, unslice, gather); matmul
//             and linear, whose products take bfloat16 and accumulate in
//             float32; safetensors BF16 files; variables and feeds.
//   float16   casts from and to every dtype; the layout ops; safetensors F16
//             files; variables and feeds. No arithmetic.
// IsFloating stays float32/float64, the dtypes that every float op
// computes in; IsReducedFloat names the 16-bit two.

#ifndef DAGRAD_ENGINE_DTYPE_H_
#define DAGRAD_ENGINE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/bfloat16.h"

namespace dagrad {

enum class DType : uint8_t { kFloat32, kFloat64, kInt32, kInt64, kBool, kBFloat16, kFloat16 };

// kAllDTypes lists every dtype, in the enum's order.
inline constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                       DType::kInt64,   DType::kBool,    DType::kBFloat16,
                                       DType::kFloat16};

// SizeOf returns the bytes one element of `dtype` occupies.
size_t SizeOf(DType dtype);

// DTypeName returns "float32", "float64", "int32", "int64", "bool",
// "bfloat16" or "float16".
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
// IsReducedFloat is true for the 16-bit floats, bfloat16 and float16.
inline bool IsReducedFloat(DType d) {
  return d == DType::kBFloat16 || d == DType::kFloat16;
}
// IsAnyFloat is true for every float dtype: IsFloating or IsReducedFloat.
inline bool IsAnyFloat(DType d) { return IsFloating(d) || IsReducedFloat(d); }

// LargestFinite is the largest finite value of a float dtype (65504 for
// float16, about 3.39e38 for bfloat16): what numeric_limits<T>::max() is
// for float and double, and ONNX's Clip bounds by default.
//
//   LargestFinite(DType::kFloat16);   // 65504
double LargestFinite(DType dtype);

// GradientDType is the dtype of a gradient with respect to a value of
// float dtype `d`: `d` itself for float32 and float64, float32 for the
// 16-bit floats. A 16-bit value is a rounded copy that a product reads
// (mixed precision); its gradient, summed where the value fans out and
// passed on to the float32 value it was cast from, keeps float32's
// precision, as the rest of the step does.
//
//   GradientDType(DType::kBFloat16);   // DType::kFloat32
inline DType GradientDType(DType d) { return IsReducedFloat(d) ? DType::kFloat32 : d; }

// DTypeBit is `d`'s bit in a set of dtypes held as a bit mask
// (OpDef::reduced_floats).
//   const uint32_t both = DTypeBit(DType::kBFloat16) | DTypeBit(DType::kFloat16);
constexpr uint32_t DTypeBit(DType d) { return 1u << static_cast<int>(d); }

// kReducedFloatBits is the set of both 16-bit floats, for the ops that move
// elements without arithmetic and so take every dtype.
inline constexpr uint32_t kReducedFloatBits = DTypeBit(DType::kBFloat16) | DTypeBit(DType::kFloat16);

// ShortestDecimal is the shortest decimal that reads back as `value`, a
// double (an integer below 2^64 in full) or a float, for messages that must
// not round a refused value to an accepted one; NaN is "nan".
//
//   ShortestDecimal(2147483648.0);   // "2147483648", where %g gives "2.14748e+09"
//   ShortestDecimal(1e20f);          // "1e+20", not the double 1.0000000200408773e+20
std::string ShortestDecimal(double value);
std::string ShortestDecimal(float value);

// CheckValueFits returns OK when `dtype` can hold `value` exactly, or
// InvalidArgument naming `what`, the value and the dtype: for int32 and
// int64 a value that is not an integer (NaN included) or outside the
// dtype's range (inf included); for bool anything but 0 and 1; for float32,
// bfloat16 and float16 a finite value beyond the largest finite value
// (rounding is expected, and inf and NaN are float values). Whatever turns a double into an element — the Fill
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
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<Float16> {
  static constexpr DType value = DType::kFloat16;
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DTYPE_H_
