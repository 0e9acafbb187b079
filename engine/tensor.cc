#include "engine/tensor.h"

#include <cmath>

#include "engine/device/aligned_buffer.h"

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

namespace {

// WithFloatType calls f(T{}) with the element type of float dtype `d`.
template <typename F>
void WithFloatType(DType d, F&& f) {
  switch (d) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kFloat16: return f(Float16{});
    default: return;
  }
}

}  // namespace

double FloatAt(const void* data, DType dtype, int64_t i) {
  double value = 0;
  WithFloatType(dtype, [&](auto tag) {
    value = ConvertElement<double>(static_cast<const decltype(tag)*>(data)[i]);
  });
  return value;
}

int64_t FirstNonFinite(const void* data, DType dtype, int64_t count) {
  int64_t bad = -1;
  WithFloatType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(data);
    for (int64_t i = 0; i < count && bad < 0; ++i) {
      if (!std::isfinite(ConvertElement<double>(p[i]))) bad = i;
    }
  });
  return bad;
}

absl::StatusOr<Tensor> ConvertFloats(const Tensor& t, DType to) {
  if (!IsAnyFloat(t.dtype()) || !IsAnyFloat(to)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ConvertFloats: ", t.TypeString(), " to ", DTypeName(to), ": both must be float dtypes"));
  }
  if (t.dtype() == to) return t;
  absl::StatusOr<Tensor> out = Tensor::Zeros(to, t.shape());
  if (!out.ok()) return out.status();
  WithFloatType(t.dtype(), [&](auto in_tag) {
    using In = decltype(in_tag);
    WithFloatType(to, [&](auto out_tag) {
      using Out = decltype(out_tag);
      const In* x = static_cast<const In*>(t.raw_data());
      Out* y = static_cast<Out*>(out->raw_data());
      for (int64_t i = 0, n = t.num_elements(); i < n; ++i) y[i] = ConvertElement<Out>(x[i]);
    });
  });
  return out;
}

}  // namespace dagrad
