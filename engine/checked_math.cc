#include "engine/checked_math.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dagrad {

std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims) {
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) {
    std::optional<int64_t> next = CheckedMul(n, d);
    if (!next.has_value()) return std::nullopt;
    n = *next;
  }
  return n;
}

std::optional<int64_t> CheckedBytes(int64_t elements, size_t element_size) {
  if (elements < 0 || element_size > static_cast<size_t>(kMaxTensorBytes)) return std::nullopt;
  std::optional<int64_t> bytes = CheckedMul(elements, static_cast<int64_t>(element_size));
  if (!bytes.has_value() || *bytes > kMaxTensorBytes) return std::nullopt;
  return bytes;
}

std::optional<int64_t> CheckedAlignUp(int64_t bytes, int64_t alignment) {
  if (bytes < 0 || alignment <= 0) return std::nullopt;
  std::optional<int64_t> padded = CheckedAdd(bytes, alignment - 1);
  if (!padded.has_value()) return std::nullopt;
  return *padded / alignment * alignment;
}

// As CPython's PySlice_Unpack and PySlice_AdjustIndices: a step of
// INT64_MIN is taken as -INT64_MAX (the count is the same, and its
// negation fits), bounds clamp to [0, len] going forwards and to
// [-1, len - 1] going backwards.
int64_t SliceLength(int64_t len, int64_t start, int64_t end, int64_t step) {
  if (step == 0 || len < 0) return 0;
  if (step == std::numeric_limits<int64_t>::min()) step = -std::numeric_limits<int64_t>::max();
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
  auto adjust = [&](int64_t v) {
    if (v < 0) return std::max(v + len, lower);  // v + len cannot overflow: v < 0 <= len
    return std::min(v, upper);
  };
  start = adjust(start);
  end = adjust(end);
  if (step > 0) return start < end ? (end - start - 1) / step + 1 : 0;
  return end < start ? (start - end - 1) / -step + 1 : 0;
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1000) return absl::StrCat(bytes, " B");
  static constexpr const char* kUnits[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes) / 1000;
  int unit = 0;
  while (v >= 999.5 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    v /= 1000;
    ++unit;
  }
  return absl::StrFormat("%.3g %s", v, kUnits[unit]);
}

}  // namespace dagrad
