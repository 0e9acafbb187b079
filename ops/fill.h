// ops/fill.h
//
// Tensors made from nothing but attributes: constant fills and ranges. They
// have no inputs, so the planner folds them into constants of the plan
// (evaluated once, when compiling); they are not differentiable.
//
//   Value pos = Arange(g, 0, T, 1, DType::kInt64);        // (T,): 0, 1, ..., T-1
//   Value bias = Fill(g, {B, 1, S}, -1e9);                 // float32
//   Value z = ZerosLike(x);                                // x's shape and dtype
//
// Values are given as integers or doubles (FillValue). An integer reaches
// an integer dtype exactly, never through a double; one that the dtype
// cannot hold (1.5 as int64, 2 as bool, 1e40 as float32, 2^31 as int32) is
// an error rather than a silent truncation.
//
// The second half of this header is the math of their kernels for one
// element, shared by the CPU kernels (ops/fill.cc) and the CUDA kernels
// (ops/cuda/fill.cu).

#ifndef DAGRAD_OPS_FILL_H_
#define DAGRAD_OPS_FILL_H_

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/attrs.h"
#include "engine/device/host_device.h"
#include "engine/graph.h"
#include "ops/math/int_math.h"

namespace dagrad {

// FillValue is a number given to Fill or Arange, held as the caller wrote
// it: an integer of any C++ integer type, exactly, as an int64; or a
// double. (An unsigned integer beyond INT64_MAX is held as its double: no
// integer dtype holds it.) It converts implicitly, so that Fill(g, s, 0)
// and Fill(g, s, 0.5) read as they should.
//
//   FillValue big = (int64_t{1} << 53) + 1;  // stays 2^53 + 1
//   FillValue half = 0.5;
class FillValue {
 public:
  template <std::integral I>
  FillValue(I v)  // NOLINT(google-explicit-constructor)
      : is_integer_(std::is_signed_v<I> || static_cast<uint64_t>(v) <= INT64_MAX),
        integer_(is_integer_ ? static_cast<int64_t>(v) : 0),
        double_(static_cast<double>(v)) {}
  FillValue(double v) : double_(v) {}  // NOLINT(google-explicit-constructor)

  bool is_integer() const { return is_integer_; }
  // integer is the value, when is_integer().
  int64_t integer() const { return integer_; }
  // ToDouble is the value, rounded to a double when it is an integer.
  double ToDouble() const { return is_integer_ ? static_cast<double>(integer_) : double_; }
  // ToInteger is the value as an element of an integer or bool `dtype`;
  // InvalidArgument naming `what` where the dtype cannot hold it exactly
  // (CheckIntegerFits, CheckValueFits), and for a float dtype.
  absl::StatusOr<int64_t> ToInteger(DType dtype, absl::string_view what) const;

 private:
  bool is_integer_ = false;
  int64_t integer_ = 0;
  double double_ = 0;
};

// Fill returns a tensor of `shape` and `dtype` with every element `value`
// (torch.full). Float dtypes accept inf and NaN; an integer given for a
// float dtype rounds to it.
//   -> shape
//
// Errors (InvalidArgument, naming fill, the node, the shape and the value):
// a negative dim; an element count whose bytes overflow int64; a value the
// dtype cannot hold (non-integer or out of range for int32/int64, not 0 or 1
// for bool, finite but beyond float32's range for float32).
//
//   Value ones = Fill(g, {2, 3}, 1.0);                    // float32 (2, 3)
//   Value pad = Fill(g, {4}, 0, DType::kInt64);           // int64 (4,)
//   Value big = Fill(g, {2}, INT64_MAX, DType::kInt64);   // exact
Value Fill(Graph& g, const Shape& shape, FillValue value, DType dtype = DType::kFloat32);

// Arange returns start, start + step, ... up to but excluding stop
// (torch.arange): ceil((stop - start) / step) elements, none when that is
// <= 0. Element i is start + i * step, computed in int64 for integer
// dtypes (exact) and in double for floats, then converted. A non-integer
// stop of an integer dtype counts as the integer next to it beyond the
// elements (Arange(g, 0, 1.5, 1, DType::kInt64) is [0, 1]).
//   -> (ceil((stop - start) / step),)
//
// Errors (InvalidArgument, naming arange, the node and the values): a step
// of 0; a start, stop or step that is not finite, or that the dtype cannot
// hold (beyond int32's, int64's or float32's range, not an integer for
// integer dtypes: so an integer range ends before INT64_MAX going up, as
// in ONNX's Range); a length whose bytes overflow int64; bool dtype.
//
//   Value t = Arange(g, 0, 5);                            // [0, 1, 2, 3, 4]
//   Value r = Arange(g, 1, 0, -0.25, DType::kFloat64);    // [1, 0.75, 0.5, 0.25]
Value Arange(Graph& g, FillValue start, FillValue stop, FillValue step = 1,
             DType dtype = DType::kFloat32);

// ZerosLike returns zeros of x's shape and dtype; OnesLike, ones. The result
// does not depend on x's values (no edge from x: it is folded). An error
// Value is returned unchanged, a null Value gives a null Value.
//   x: any  ->  x's shape and dtype
//
//   Value z = ZerosLike(x);                               // x (B, T, E) -> (B, T, E)
//   Value m = OnesLike(mask);                             // bool: all true
Value ZerosLike(Value x);
Value OnesLike(Value x);

// ==== The math, for one element ===============================================
//
// A fill or arange node holds its values (value; start, stop, step) as the
// attributes its kernel reads: int64 for integer and bool dtypes, double
// for floats. FillValueAttr reads one back (for the ONNX exporter).
FillValue FillValueAttr(const Attrs& attrs, absl::string_view name, DType dtype);

// FillElement returns a fill node's value as a T.
template <typename T>
T FillElement(const Attrs& attrs) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(attrs.GetFloat("value"));
  } else {
    return static_cast<T>(attrs.GetInt("value"));
  }
}

// ArangeFn::At returns element i of an arange node as a T: start + i * step in
// double for floats; in int64 for the others, with products that wrap, so
// that i * step may pass 2^63 on its way to an element between start and
// stop (INT64_MIN + 3 * 2^62 is 2^62).
struct ArangeFn {
  explicit ArangeFn(const Attrs& a)
      : start(a.GetInt("start")),
        step(a.GetInt("step")),
        start_f(a.GetFloat("start")),
        step_f(a.GetFloat("step")) {}
  template <typename T>
  DAGRAD_HOST_DEVICE T At(int64_t i) const {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(start_f + static_cast<double>(i) * step_f);
    } else {
      return static_cast<T>(WrapAdd(start, WrapMul(i, step)));
    }
  }
  int64_t start, step;
  double start_f, step_f;
};

}  // namespace dagrad

#endif  // DAGRAD_OPS_FILL_H_
