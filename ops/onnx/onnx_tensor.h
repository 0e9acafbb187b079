// ops/onnx/onnx_tensor.h
//
// ONNX TensorProto <-> dagrad Tensor, and the element types the two share:
// FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT32, INT64 and BOOL. Every other ONNX
// type (uint8, string, ...) is an Unimplemented error naming it. FLOAT16
// and BFLOAT16 values held in int32_data (as ONNX keeps them, one per
// int32) are 16-bit words; a value outside [0, 65535] is an error.
//
// A TensorProto's data may sit in raw_data, in the typed repeated fields, or
// in a file beside the model (external data). External data is read only
// from a regular file inside the model's folder, every symlink resolved:
// an absolute location, one that climbs out with "..", a link that leads
// out (to /etc/passwd) and a FIFO, device or directory are refused (a FIFO
// at once, never waited on), as is an offset or length outside the file.
// Every size is checked (engine/checked_math.h) before anything is
// allocated, and a tensor whose bytes disagree with its dims is an error,
// never a short read.
//
//   onnx::TensorProto proto = TensorToOnnx(Tensor::Scalar<float>(2.0f), "w");
//   DAGRAD_ASSIGN_OR_RETURN(Tensor w, TensorFromOnnx(proto, "/models/gpt"));  // float32 ()

#ifndef DAGRAD_OPS_ONNX_ONNX_TENSOR_H_
#define DAGRAD_OPS_ONNX_ONNX_TENSOR_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/dtype.h"
#include "engine/shape.h"
#include "engine/tensor.h"

namespace dagrad {

// DTypeFromOnnx returns the dagrad dtype of an ONNX TensorProto::DataType;
// Unimplemented naming the ONNX type for one dagrad has not.
//
//   absl::StatusOr<DType> d = DTypeFromOnnx(onnx::TensorProto::INT64);   // kInt64
absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type);

// OnnxTypeOf returns the ONNX TensorProto::DataType of a dagrad dtype.
//
//   int32_t t = OnnxTypeOf(DType::kFloat32);   // onnx::TensorProto::FLOAT
int32_t OnnxTypeOf(DType dtype);

// OnnxTypeName returns ONNX's name of a data type ("FLOAT16"), or
// "type <n>" for a number ONNX does not define.
std::string OnnxTypeName(int32_t onnx_type);

// ShapeFromOnnxDims returns the shape of `dims`; InvalidArgument naming
// `what` for a negative dim or one whose bytes as `dtype` exceed 2^62.
//
//   absl::StatusOr<Shape> s = ShapeFromOnnxDims(proto.dims(), DType::kFloat32, "w");
absl::StatusOr<Shape> ShapeFromOnnxDims(
    const google::protobuf::RepeatedField<int64_t>& dims, DType dtype,
    const std::string& what);

// TensorFromOnnx returns the tensor `proto` holds. `model_dir` is the folder
// external data is read from ("" when the model came from memory: then
// external data is an error).
//
// Errors (naming the tensor): Unimplemented for a data type dagrad lacks;
// InvalidArgument for bad dims, data whose size disagrees with the dims, a
// bool other than 0 or 1, an external location that is absolute or leaves
// the folder (by ".." or by a link), one that is no regular file, an offset
// or length beyond the file; NotFound when the file is missing (or a
// dangling link). External-data errors name the location and why.
absl::StatusOr<Tensor> TensorFromOnnx(const onnx::TensorProto& proto,
                                      const std::string& model_dir);

// TensorToOnnx returns `tensor` as a TensorProto called `name`: dims and
// raw_data (little-endian, one byte per bool, as ONNX specifies).
onnx::TensorProto TensorToOnnx(const Tensor& tensor, const std::string& name);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_ONNX_TENSOR_H_
