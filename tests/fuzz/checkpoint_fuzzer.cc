// libFuzzer target: a checkpoint as LoadVariables and ReadCheckpoint see it
// (engine/io/checkpoint.h), the checksums over safetensors. The first byte
// says whether checksums are required (bit 0); the rest is the file. A
// damaged file must be DataLoss (Unimplemented for a dtype dagrad lacks),
// as the header documents, and whatever the strict reading accepts, the
// lenient one accepts too, with the same tensors.

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/io/checkpoint.h"

namespace {

bool Documented(const absl::Status& status) {
  return status.code() == absl::StatusCode::kDataLoss ||
         status.code() == absl::StatusCode::kUnimplemented;
}

bool SameTensors(const dagrad::SafetensorsFile& a, const dagrad::SafetensorsFile& b) {
  if (a.tensors.size() != b.tensors.size() || a.metadata != b.metadata) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const dagrad::Tensor& x = a.tensors[i].second;
    const dagrad::Tensor& y = b.tensors[i].second;
    if (a.tensors[i].first != b.tensors[i].first || x.dtype() != y.dtype() ||
        x.shape() != y.shape() || std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool strict = (data[0] & 1) != 0;
  const absl::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  absl::StatusOr<dagrad::SafetensorsFile> file =
      dagrad::ParseCheckpoint(bytes, {.require_checksums = strict});
  if (!file.ok()) {
    if (!Documented(file.status())) std::abort();
    return 0;
  }
  (void)dagrad::RequireFinite(*file);
  if (strict) {
    absl::StatusOr<dagrad::SafetensorsFile> lenient = dagrad::ParseCheckpoint(bytes);
    if (!lenient.ok() || !SameTensors(*file, *lenient)) std::abort();
  }
  return 0;
}
