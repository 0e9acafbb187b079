#include "engine/dtype.h"

namespace dagrad {

size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<DType> DTypeFromName(absl::string_view name) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32,
                  DType::kInt64, DType::kBool}) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

}  // namespace dagrad
