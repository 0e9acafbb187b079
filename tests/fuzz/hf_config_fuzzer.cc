// libFuzzer target: a Hugging Face GPT-2 config.json (ParseHfGpt2Config,
// models/gpt2/hf_config.h) on arbitrary bytes. Traps when broken:
//   - a refusal is not InvalidArgument naming the file;
//   - an accepted config fails Validate, or does not come back from a
//     checkpoint's metadata (ToMetadata, then FromMetadata) with the same
//     sizes and activation (the epsilon goes through a decimal string).

#include <cstdint>
#include <cstdlib>

#include "absl/strings/match.h"
#include "models/gpt2/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dagrad::models::Gpt2Config;
  constexpr char kPath[] = "fuzz/config.json";
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Gpt2Config> c = dagrad::models::ParseHfGpt2Config(json, kPath);
  if (!c.ok()) {
    if (c.status().code() != absl::StatusCode::kInvalidArgument ||
        !absl::StartsWith(c.status().message(), kPath)) {
      std::abort();
    }
    return 0;
  }
  if (!c->Validate().ok()) std::abort();
  absl::StatusOr<Gpt2Config> back = Gpt2Config::FromMetadata(c->ToMetadata());
  if (!back.ok() || back->vocab != c->vocab || back->positions != c->positions ||
      back->dim != c->dim || back->heads != c->heads || back->layers != c->layers ||
      back->mlp_width() != c->mlp_width() || back->activation != c->activation) {
    std::abort();
  }
  return 0;
}
