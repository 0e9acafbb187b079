#include "engine/shape.h"

#include <algorithm>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/checked_math.h"

namespace dagrad {

int64_t Shape::num_elements() const { return CheckedProduct(dims_).value_or(-1); }

std::string Shape::ToString() const {
  if (dims_.size() == 1) return absl::StrCat("(", dims_[0], ",)");
  return absl::StrCat("(", absl::StrJoin(dims_, ", "), ")");
}

absl::StatusOr<int64_t> ValidateDims(absl::Span<const int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "negative dimension ", d, " in shape (", absl::StrJoin(dims, ", "), ")"));
    }
  }
  std::optional<int64_t> n = CheckedProduct(dims);
  if (!n.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "element count of shape (", absl::StrJoin(dims, ", "), ") overflows int64"));
  }
  return *n;
}

absl::StatusOr<int64_t> ValidateBytes(const Shape& shape, DType dtype) {
  absl::StatusOr<int64_t> n = ValidateDims(shape.dims());
  if (!n.ok()) return n.status();
  std::optional<int64_t> bytes = CheckedBytes(*n, SizeOf(dtype));
  if (!bytes.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        DTypeName(dtype), " ", shape.ToString(),
        " needs more than the 2^62 bytes a tensor may hold (", *n, " elements of ",
        SizeOf(dtype), " bytes)"));
  }
  return *bytes;
}

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Dims out(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", a.ToString(), " and ", b.ToString(),
                       " do not broadcast (axis ", i - rank, ": ", da, " vs ",
                       db, ")"));
    }
    out[i] = da == 1 ? db : da;
  }
  return Shape(out);
}

bool IsBroadcastableTo(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int i = 0; i < from.rank(); ++i) {
    const int64_t f = from[from.rank() - 1 - i], t = to[to.rank() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis ", axis, " is out of range for rank ", rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Dims RowMajorStrides(const Shape& shape) {
  Dims strides(shape.rank());
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = s;
    s = CheckedMul(s, shape[i]).value_or(0);
  }
  return strides;
}

Dims BroadcastStrides(const Shape& in, const Shape& out) {
  Dims strides(out.rank(), 0);
  const Dims own = RowMajorStrides(in);
  const int shift = out.rank() - in.rank();
  for (int i = 0; i < in.rank(); ++i) {
    strides[shift + i] = in[i] == 1 && out[shift + i] != 1 ? 0 : own[i];
  }
  return strides;
}

}  // namespace dagrad
