#include "engine/tensor.h"


#include "engine/aligned_buffer.h"

namespace dagrad {

Tensor::Tensor(DType dtype, const Shape& shape)
    : dtype_(dtype),
      shape_(shape),
      storage_(AllocateAligned(shape.num_elements() * SizeOf(dtype))) {}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, const Shape& shape) {
  auto n = ValidateDims(shape.dims());
  if (!n.ok()) return n.status();
  if (static_cast<uint64_t>(*n) > (uint64_t{1} << 62) / SizeOf(dtype)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "tensor of ", DTypeName(dtype), " ", shape.ToString(), " is too large"));
  }
  Tensor t(dtype, shape);
  if (t.storage_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory allocating ", t.TypeString()));
  }
  return t;
}

Tensor Tensor::Clone() const {
  Tensor copy(dtype_, shape_);
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
