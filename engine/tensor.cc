#include "engine/tensor.h"

#include "engine/aligned_buffer.h"

namespace dagrad {

Tensor::Tensor(DType dtype, const Shape& shape, int64_t bytes)
    : dtype_(dtype), shape_(shape), storage_(AllocateAligned(static_cast<size_t>(bytes))) {}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, const Shape& shape) {
  absl::StatusOr<int64_t> bytes = ValidateBytes(shape, dtype);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat("tensor: ", bytes.status().message()));
  }
  Tensor t(dtype, shape, *bytes);
  if (t.storage_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory allocating ", t.TypeString()));
  }
  return t;
}

Tensor Tensor::Clone() const {
  Tensor copy(dtype_, shape_, static_cast<int64_t>(nbytes()));
  if (nbytes() > 0) std::memcpy(copy.raw_data(), raw_data(), nbytes());
  return copy;
}

absl::StatusOr<Tensor> Tensor::Reshaped(const Shape& shape) const {
  auto n = ValidateDims(shape.dims());
  if (!n.ok()) return n.status();
  if (*n != num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", TypeString(), " to ", shape.ToString(),
                     ": element counts differ"));
  }
  Tensor view = *this;
  view.shape_ = shape;
  return view;
}

std::string Tensor::TypeString() const {
  return absl::StrCat(DTypeName(dtype_), " ", shape_.ToString());
}

}  // namespace dagrad
