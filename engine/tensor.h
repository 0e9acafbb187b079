// engine/tensor.h
//
// Tensor: a dense, row-major, host-memory array with a dtype and a shape. It
// is what users feed into a run, get back as fetches, and read or write as
// parameter values. Copies share storage (like a shared_ptr); Clone() makes a
// deep copy. Storage is 64-byte aligned and zero-initialised.
//
//   DAGRAD_ASSIGN_OR_RETURN(Tensor x, Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
//   float first = x.data<float>()[0];
//   Tensor lengths = Tensor::Scalar<int64_t>(3);

#ifndef DAGRAD_ENGINE_TENSOR_H_
#define DAGRAD_ENGINE_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/dtype.h"
#include "engine/shape.h"

namespace dagrad {

class Tensor {
 public:
  // An empty float32 tensor of shape (0,).
  Tensor() : Tensor(DType::kFloat32, Shape({0}), 0) {}

  // Zeros returns a zero-filled tensor; InvalidArgument for a bad shape or
  // one over 2^62 bytes (ValidateBytes), ResourceExhausted when the memory
  // cannot be allocated.
  static absl::StatusOr<Tensor> Zeros(DType dtype, const Shape& shape);

  // FromVector returns a tensor holding `values`; InvalidArgument when their
  // count differs from the shape's element count.
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(const Shape& shape,
                                           const std::vector<T>& values);

  // Scalar returns a rank-0 tensor.
  template <typename T>
  static Tensor Scalar(T value);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  // A tensor's shape passed ValidateBytes, so these cannot overflow.
  int64_t num_elements() const { return shape_.num_elements(); }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * SizeOf(dtype_); }

  // data returns the elements as T, or nullptr when T is not the dtype.
  template <typename T>
  T* data() {
    return DTypeOf<T>::value == dtype_ ? static_cast<T*>(raw_data()) : nullptr;
  }
  template <typename T>
  const T* data() const {
    return DTypeOf<T>::value == dtype_ ? static_cast<const T*>(raw_data())
                                       : nullptr;
  }
  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }

  // ToVector copies the elements out; empty when T is not the dtype.
  template <typename T>
  std::vector<T> ToVector() const {
    const T* p = data<T>();
    return p ? std::vector<T>(p, p + num_elements()) : std::vector<T>();
  }

  // Clone returns a deep copy.
  Tensor Clone() const;

  // Reshaped returns a tensor sharing this storage with another shape of the
  // same element count; InvalidArgument otherwise.
  absl::StatusOr<Tensor> Reshaped(const Shape& shape) const;

  // TypeString returns e.g. "float32 (2, 3)", for error messages.
  std::string TypeString() const;

 private:
  // `bytes` is the shape's validated byte count.
  Tensor(DType dtype, const Shape& shape, int64_t bytes);

  DType dtype_;
  Shape shape_;
  std::shared_ptr<void> storage_;
};

// ConvertFloats returns `t` in the float dtype `to` (float32, float64,
// bfloat16 or float16), each element converted as ConvertElement does
// (engine/bfloat16.h): exactly when widening, rounded to nearest even when
// narrowing. A tensor already of dtype `to` is returned as is (sharing
// storage).
//
// Errors: InvalidArgument when `t` or `to` is not a float dtype;
// ResourceExhausted when the copy cannot be allocated.
//
//   // setup: Tensors
//   DAGRAD_ASSIGN_OR_RETURN(Tensor wide, ConvertFloats(bf16_weights, DType::kFloat32));
absl::StatusOr<Tensor> ConvertFloats(const Tensor& t, DType to);

// FloatAt returns element `i` of the `dtype` elements at `data`, a float
// dtype, as a double (exactly).
//   // setup: Tensors
//   double first = FloatAt(t.raw_data(), t.dtype(), 0);
double FloatAt(const void* data, DType dtype, int64_t i);

// FirstNonFinite returns the index of the first NaN or +-inf among the
// `count` elements of dtype `dtype` at `data`, or -1; always -1 for integer
// and bool dtypes.
//   // setup: Tensors
//   const bool finite = FirstNonFinite(t.raw_data(), t.dtype(), t.num_elements()) < 0;
int64_t FirstNonFinite(const void* data, DType dtype, int64_t count);

template <typename T>
absl::StatusOr<Tensor> Tensor::FromVector(const Shape& shape,
                                          const std::vector<T>& values) {
  auto t = Zeros(DTypeOf<T>::value, shape);
  if (!t.ok()) return t.status();
  if (static_cast<int64_t>(values.size()) != t->num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Tensor::FromVector: ", values.size(),
                     " values for shape ", shape.ToString(), " which holds ",
                     t->num_elements()));
  }
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) t->template data<bool>()[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(t->raw_data(), values.data(), values.size() * sizeof(T));
  }
  return t;
}

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t(DTypeOf<T>::value, Shape(), sizeof(T));
  *t.data<T>() = value;
  return t;
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_TENSOR_H_
