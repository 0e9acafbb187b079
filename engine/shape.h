// engine/shape.h
//
// Shapes of tensors: a list of int64 dimensions, row-major. A rank-0 shape is
// a scalar. Every shape that reaches a Graph has been validated: no negative
// dimension, the element count fits in int64 (ValidateDims), and its bytes
// are at most kMaxTensorBytes, 2^62 (ValidateBytes). Size arithmetic goes
// through engine/checked_math.h.
//
//   Shape s({2, 3, 4});
//   s.num_elements();         // 24
//   s.ToString();             // "(2, 3, 4)"
//   absl::StatusOr<Shape> b = BroadcastShapes(Shape({2, 1, 4}), Shape({3, 1}));  // (2, 3, 4)

#ifndef DAGRAD_ENGINE_SHAPE_H_
#define DAGRAD_ENGINE_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/dtype.h"

namespace dagrad {

using Dims = absl::InlinedVector<int64_t, 6>;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const int64_t> dims)
      : dims_(dims.begin(), dims.end()) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  int64_t operator[](int i) const { return dims_[i]; }
  const Dims& dims() const { return dims_; }
  Dims& mutable_dims() { return dims_; }

  // num_elements returns the product of the dims (1 for a scalar), or -1
  // when it overflows int64: a shape no graph or tensor accepts.
  int64_t num_elements() const;

  // ToString returns "(2, 3, 4)", "()" for a scalar.
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.dims_ == b.dims_;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Shape& s) {
    return H::combine(std::move(h), s.dims_);
  }

 private:
  Dims dims_;
};

// ValidateDims returns the element count of `dims`, or InvalidArgument when a
// dim is negative or the product overflows int64.
absl::StatusOr<int64_t> ValidateDims(absl::Span<const int64_t> dims);

// ValidateBytes returns the byte count of a `dtype` tensor of `shape`, or
// InvalidArgument when ValidateDims fails or the bytes exceed
// kMaxTensorBytes (2^62): "float32 (2147483648, 2147483648) needs more than
// the 2^62 bytes a tensor may hold".
absl::StatusOr<int64_t> ValidateBytes(const Shape& shape, DType dtype);

// BroadcastShapes returns the numpy-style broadcast of `a` and `b`, or
// InvalidArgument naming both shapes when they are incompatible.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// IsBroadcastableTo is true when `from` broadcasts to exactly `to`.
bool IsBroadcastableTo(const Shape& from, const Shape& to);

// NormalizeAxis maps a possibly negative axis into [0, rank), or returns
// InvalidArgument when it is out of range.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank);

// RowMajorStrides returns element strides of a contiguous tensor of `shape`.
// In a shape with no elements (a 0 dim) a stride that would overflow is 0:
// no element is ever addressed through it.
Dims RowMajorStrides(const Shape& shape);

// BroadcastStrides returns the element strides of a contiguous tensor of
// shape `in` aligned to `out`'s axes, 0 on the axes where it is broadcast.
// `in` must broadcast to `out`.
Dims BroadcastStrides(const Shape& in, const Shape& out);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_SHAPE_H_
