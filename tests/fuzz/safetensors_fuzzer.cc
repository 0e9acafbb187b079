// libFuzzer target: the safetensors reader on arbitrary bytes. Whatever it
// accepts must serialise and parse back to the same tensors.

#include <cstdint>
#include <cstdlib>

#include "engine/io/safetensors.h"
#include "tests/fuzz/same_tensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dagrad::SafetensorsFile> file = dagrad::ParseSafetensors(bytes);
  if (!file.ok()) return 0;
  absl::StatusOr<std::string> again = dagrad::SerializeSafetensors(*file);
  if (!again.ok()) return 0;  // e.g. names the writer refuses
  absl::StatusOr<dagrad::SafetensorsFile> back = dagrad::ParseSafetensors(*again);
  if (!back.ok() || !SameTensors(*file, *back)) std::abort();
  return 0;
}
