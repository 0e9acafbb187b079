// libFuzzer target: the safetensors reader on arbitrary bytes. Whatever it
// accepts must serialise and parse back to the same tensors.

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dagrad::SafetensorsFile> file = dagrad::ParseSafetensors(bytes);
  if (!file.ok()) return 0;
  absl::StatusOr<std::string> again = dagrad::SerializeSafetensors(*file);
  if (!again.ok()) return 0;  // e.g. names the writer refuses
  absl::StatusOr<dagrad::SafetensorsFile> back = dagrad::ParseSafetensors(*again);
  if (!back.ok() || back->tensors.size() != file->tensors.size() ||
      back->metadata != file->metadata) {
    std::abort();
  }
  for (size_t i = 0; i < file->tensors.size(); ++i) {
    const dagrad::Tensor& a = file->tensors[i].second;
    const dagrad::Tensor* b = back->Find(file->tensors[i].first);
    if (b == nullptr || a.dtype() != b->dtype() || a.shape() != b->shape() ||
        std::memcmp(a.raw_data(), b->raw_data(), a.nbytes()) != 0) {
      std::abort();
    }
  }
  return 0;
}
