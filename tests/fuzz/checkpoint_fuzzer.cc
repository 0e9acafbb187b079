// libFuzzer target: a checkpoint as LoadVariables and ReadCheckpoint see it
// (engine/io/checkpoint.h), the checksums over safetensors. The first byte
// says whether checksums are required (bit 0); the rest is the file. A
// damaged file must be DataLoss (Unimplemented for a dtype dagrad lacks),
// as the header documents, and whatever the strict reading accepts, the
// lenient one accepts too, with the same tensors.

#include <cstdint>
#include <cstdlib>

#include "engine/io/checkpoint.h"
#include "tests/fuzz/same_tensors.h"

namespace {

bool Documented(const absl::Status& status) {
  return status.code() == absl::StatusCode::kDataLoss ||
         status.code() == absl::StatusCode::kUnimplemented;
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
