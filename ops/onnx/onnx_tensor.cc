// ops/onnx/onnx_tensor.cc

#include "ops/onnx/onnx_tensor.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/checked_math.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

using onnx::TensorProto;

absl::Status BadTensor(const TensorProto& proto, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("ONNX tensor '", proto.name(), "': ", why));
}

// CopyTyped copies a repeated field of `From` elements into `out` as `To`.
template <typename To, typename Field>
absl::Status CopyTyped(const TensorProto& proto, const Field& field,
                       Tensor& out) {
  if (field.size() != out.num_elements()) {
    return BadTensor(proto, absl::StrCat(field.size(), " values for dims ",
                                         out.shape().ToString()));
  }
  To* data = static_cast<To*>(out.raw_data());
  for (int i = 0; i < field.size(); ++i) {
    if constexpr (std::is_same_v<To, bool>) {
      if (field.Get(i) != 0 && field.Get(i) != 1) {
        return BadTensor(proto, absl::StrCat("bool value ", field.Get(i)));
      }
    }
    data[i] = static_cast<To>(field.Get(i));
  }
  return absl::OkStatus();
}

// CopyHalfWords copies float16 or bfloat16 values from int32_data, where
// ONNX keeps each one's 16 bits in the low half of an int32.
template <typename Half>
absl::Status CopyHalfWords(const TensorProto& proto, Tensor& out) {
  if (proto.int32_data_size() != out.num_elements()) {
    return BadTensor(proto, absl::StrCat(proto.int32_data_size(), " values for dims ",
                                         out.shape().ToString()));
  }
  Half* data = out.data<Half>();
  for (int i = 0; i < proto.int32_data_size(); ++i) {
    const int32_t word = proto.int32_data(i);
    if (word < 0 || word > 0xffff) {
      return BadTensor(proto, absl::StrCat("16-bit value ", word, " at ", i));
    }
    data[i].bits = static_cast<uint16_t>(word);
  }
  return absl::OkStatus();
}

absl::Status CopyTypedFields(const TensorProto& proto, Tensor& out) {
  switch (out.dtype()) {
    case DType::kFloat32:
      return CopyTyped<float>(proto, proto.float_data(), out);
    case DType::kFloat64:
      return CopyTyped<double>(proto, proto.double_data(), out);
    case DType::kInt32:
      return CopyTyped<int32_t>(proto, proto.int32_data(), out);
    case DType::kInt64:
      return CopyTyped<int64_t>(proto, proto.int64_data(), out);
    case DType::kBool:
      return CopyTyped<bool>(proto, proto.int32_data(), out);
    case DType::kBFloat16:
      return CopyHalfWords<BFloat16>(proto, out);
    case DType::kFloat16:
      return CopyHalfWords<Float16>(proto, out);
  }
  return absl::InternalError("unknown dtype");
}

absl::Status CopyBytes(const TensorProto& proto, absl::string_view bytes,
                       Tensor& out) {
  if (bytes.size() != out.nbytes()) {
    return BadTensor(proto, absl::StrCat(bytes.size(), " bytes of data for ",
                                         out.TypeString(), ", which takes ",
                                         out.nbytes()));
  }
  if (!bytes.empty()) std::memcpy(out.raw_data(), bytes.data(), bytes.size());
  if (out.dtype() == DType::kBool) {
    const auto* b = static_cast<const uint8_t*>(out.raw_data());
    for (int64_t i = 0, count = out.num_elements(); i < count; ++i) {
      if (b[i] > 1) return BadTensor(proto, absl::StrCat("bool byte ", b[i]));
    }
  }
  return absl::OkStatus();
}

// CheckLocation refuses a location that names a file outside the model's
// folder by its text; FileInFolder refuses one that reaches out by a link.
absl::Status CheckLocation(const TensorProto& proto, const std::string& location,
                           const std::string& model_dir) {
  if (model_dir.empty()) {
    return BadTensor(proto, "external data in a model read from memory");
  }
  if (location.empty() || location[0] == '/' || location[0] == '\\') {
    return BadTensor(proto, absl::StrCat("external data location '", location,
                                         "' is not relative to the model's folder"));
  }
  for (absl::string_view part : absl::StrSplit(location, absl::ByAnyChar("/\\"))) {
    if (part == "..") {
      return BadTensor(proto, absl::StrCat("external data location '", location,
                                           "' leaves the model's folder"));
    }
  }
  return absl::OkStatus();
}

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: to the end of the file
};

absl::StatusOr<ExternalRef> ParseExternal(const TensorProto& proto) {
  ExternalRef ref;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(entry.value(), &v) || v < 0) {
        return BadTensor(proto, absl::StrCat("external data ", entry.key(), " '",
                                             entry.value(), "' is not an integer >= 0"));
      }
      (entry.key() == "offset" ? ref.offset : ref.length) = v;
    }
  }
  return ref;
}

// ExternalError is `error`, from the file at `ref`, naming the tensor and
// the location first, with the error's code.
absl::Status ExternalError(const TensorProto& proto, const ExternalRef& ref,
                           const absl::Status& error) {
  return absl::Status(error.code(), absl::StrCat("ONNX tensor '", proto.name(),
                                                 "': external data '", ref.location,
                                                 "': ", error.message()));
}

absl::StatusOr<Tensor> ReadExternal(const TensorProto& proto, const std::string& model_dir,
                                    DType dtype, const Shape& shape) {
  DAGRAD_ASSIGN_OR_RETURN(ExternalRef ref, ParseExternal(proto));
  DAGRAD_RETURN_IF_ERROR(CheckLocation(proto, ref.location, model_dir));
  absl::StatusOr<FileInFolder> file = FileInFolder::Open(model_dir, ref.location);
  if (!file.ok()) return ExternalError(proto, ref, file.status());
  const int64_t file_size = file->size();
  const int64_t length = ref.length < 0 ? file_size - ref.offset : ref.length;
  std::optional<int64_t> end = CheckedAdd(ref.offset, length);
  if (length < 0 || !end || *end > file_size) {
    return BadTensor(proto, absl::StrCat("external data [", ref.offset, ", +", length,
                                         ") lies beyond ", file->path(), " (", file_size,
                                         " bytes)"));
  }
  const int64_t want = shape.num_elements() * static_cast<int64_t>(SizeOf(dtype));
  if (length != want) {
    return BadTensor(proto, absl::StrCat(length, " bytes of external data for ",
                                         DTypeName(dtype), " ", shape.ToString(),
                                         ", which takes ", want));
  }
  DAGRAD_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(dtype, shape));
  absl::Status read = file->ReadAt(ref.offset, length, out.raw_data());
  if (!read.ok()) return ExternalError(proto, ref, read);
  return out;
}

int TypedFieldSize(const TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return proto.float_data_size();
    case DType::kFloat64:
      return proto.double_data_size();
    case DType::kInt64:
      return proto.int64_data_size();
    case DType::kInt32:
    case DType::kBool:
    case DType::kBFloat16:
    case DType::kFloat16:
      return proto.int32_data_size();
  }
  return 0;
}

// CheckInlineSize compares the data held in the proto with its dims before
// anything is allocated, so that dims declaring terabytes over a few bytes
// of data fail at once.
absl::Status CheckInlineSize(const TensorProto& proto, DType dtype, const Shape& shape) {
  const int64_t elements = shape.num_elements();
  if (proto.has_raw_data()) {
    const int64_t want = elements * static_cast<int64_t>(SizeOf(dtype));
    if (static_cast<int64_t>(proto.raw_data().size()) == want) return absl::OkStatus();
    return BadTensor(proto, absl::StrCat(proto.raw_data().size(), " bytes of data for ",
                                         DTypeName(dtype), " ", shape.ToString(),
                                         ", which takes ", want));
  }
  if (TypedFieldSize(proto, dtype) == elements) return absl::OkStatus();
  return BadTensor(proto, absl::StrCat(TypedFieldSize(proto, dtype), " values for ",
                                       DTypeName(dtype), " ", shape.ToString()));
}

}  // namespace

absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
      return DType::kFloat32;
    case TensorProto::DOUBLE:
      return DType::kFloat64;
    case TensorProto::INT32:
      return DType::kInt32;
    case TensorProto::INT64:
      return DType::kInt64;
    case TensorProto::BOOL:
      return DType::kBool;
    case TensorProto::BFLOAT16:
      return DType::kBFloat16;
    case TensorProto::FLOAT16:
      return DType::kFloat16;
  }
  return absl::UnimplementedError(absl::StrCat(
      "ONNX element type ", OnnxTypeName(onnx_type),
      " (dagrad has float, double, float16, bfloat16, int32, int64 and bool)"));
}

int32_t OnnxTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return TensorProto::FLOAT;
    case DType::kFloat64:
      return TensorProto::DOUBLE;
    case DType::kInt32:
      return TensorProto::INT32;
    case DType::kInt64:
      return TensorProto::INT64;
    case DType::kBool:
      return TensorProto::BOOL;
    case DType::kBFloat16:
      return TensorProto::BFLOAT16;
    case DType::kFloat16:
      return TensorProto::FLOAT16;
  }
  return TensorProto::UNDEFINED;
}

std::string OnnxTypeName(int32_t onnx_type) {
  if (!TensorProto::DataType_IsValid(onnx_type)) {
    return absl::StrCat("type ", onnx_type);
  }
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(onnx_type));
}

absl::StatusOr<Shape> ShapeFromOnnxDims(
    const google::protobuf::RepeatedField<int64_t>& dims, DType dtype,
    const std::string& what) {
  Shape shape(absl::MakeConstSpan(dims.data(), dims.size()));
  absl::StatusOr<int64_t> bytes = ValidateBytes(shape, dtype);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes.status().message()));
  }
  return shape;
}

absl::StatusOr<Tensor> TensorFromOnnx(const TensorProto& proto,
                                      const std::string& model_dir) {
  absl::StatusOr<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) {
    return absl::UnimplementedError(absl::StrCat(
        "ONNX tensor '", proto.name(), "': ", dtype.status().message()));
  }
  DAGRAD_ASSIGN_OR_RETURN(
      Shape shape, ShapeFromOnnxDims(proto.dims(), *dtype,
                                     absl::StrCat("ONNX tensor '", proto.name(), "'")));
  if (proto.data_location() == TensorProto::EXTERNAL) {
    return ReadExternal(proto, model_dir, *dtype, shape);
  }
  DAGRAD_RETURN_IF_ERROR(CheckInlineSize(proto, *dtype, shape));
  DAGRAD_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(*dtype, shape));
  if (proto.has_raw_data()) {
    DAGRAD_RETURN_IF_ERROR(CopyBytes(proto, proto.raw_data(), out));
  } else {
    DAGRAD_RETURN_IF_ERROR(CopyTypedFields(proto, out));
  }
  return out;
}

onnx::TensorProto TensorToOnnx(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(OnnxTypeOf(tensor.dtype()));
  for (int64_t d : tensor.shape().dims()) proto.add_dims(d);
  proto.set_raw_data(tensor.raw_data(), tensor.nbytes());
  return proto;
}

}  // namespace dagrad
