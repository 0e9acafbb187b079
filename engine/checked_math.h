// engine/checked_math.h
//
// Overflow-checked size arithmetic. Every element count, byte count, stride,
// offset sum and slice length dagrad computes from user-given sizes goes
// through these helpers, so that a size too large for int64 becomes an
// error instead of wrapping around (a wrapped byte count plans a tiny arena
// and crashes at run time; a signed overflow is undefined behaviour).
//
//   std::optional<int64_t> n = CheckedMul(int64_t{1} << 31, int64_t{1} << 31);  // 2^62
//   std::optional<int64_t> bytes = CheckedBytes(*n, 4);   // nullopt: 2^64 overflows
//   int64_t kept = SliceLength(10, 0, INT64_MAX, INT64_MAX);  // 1, as Python's len(range(10)[0::big])

#ifndef DAGRAD_ENGINE_CHECKED_MATH_H_
#define DAGRAD_ENGINE_CHECKED_MATH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/types/span.h"

namespace dagrad {

// kMaxTensorBytes bounds one tensor's bytes: 4 EiB, far beyond any
// machine, and low enough that aligning it up and adding a few of them
// (arena offsets, budgets) is still checked arithmetic on int64.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 62;

// CheckedAdd / CheckedMul return a + b / a * b, or nullopt when the exact
// result does not fit in int64.
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// CheckedProduct returns the product of `dims` (1 for none), or nullopt
// when it overflows int64. A zero anywhere makes the product 0, whatever
// the other factors.
std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims);

// CheckedBytes returns elements * element_size when it is at most
// kMaxTensorBytes (and elements >= 0), nullopt otherwise.
std::optional<int64_t> CheckedBytes(int64_t elements, size_t element_size);

// CheckedAlignUp rounds `bytes` (>= 0) up to a multiple of `alignment`
// (> 0), or returns nullopt when the result overflows.
std::optional<int64_t> CheckedAlignUp(int64_t bytes, int64_t alignment);

// SliceLength returns len(range(len)[start:end:step]) exactly as Python
// computes it, for any int64 start, end and step != 0 (negative bounds count
// from the end, out-of-range bounds clamp; a negative step walks backwards).
// It returns 0 for step == 0, which Python rejects.
int64_t SliceLength(int64_t len, int64_t start, int64_t end, int64_t step);

// HumanBytes formats a byte count for messages: "512 B", "3.2 KB", "1.5 GB",
// "256 TB" (powers of 1000, like `df -H`; three significant digits).
std::string HumanBytes(int64_t bytes);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CHECKED_MATH_H_
