// The writing half of engine/io/safetensors.h: the header is written as
// tools/goldens/safetensors_io.py writes it, so the bytes are the same.
// Reading, which trusts nothing in the file, is in safetensors.cc.

#include "engine/io/safetensors.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// AppendJsonString writes `s` as Python's json.dumps does (ensure_ascii):
// quotes, backslashes and everything outside printable ASCII escaped, code
// points above U+FFFF as surrogate pairs, hex in lower case.
absl::Status AppendJsonString(absl::string_view s, absl::string_view what, std::string& out) {
  out += '"';
  size_t pos = 0;
  while (pos < s.size()) {
    const int32_t c = NextCodePoint(s, pos);
    if (c < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SerializeSafetensors: ", what, " ", QuotedText(s), " is not valid UTF-8 (byte ", pos - 1,
          ")"));
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c >= 0x20 && c < 0x7F) {
          out += static_cast<char>(c);
        } else if (c < 0x10000) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          const int32_t v = c - 0x10000;
          absl::StrAppendFormat(&out, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
        }
    }
  }
  out += '"';
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> SerializeSafetensors(const SafetensorsFile& file) {
  std::vector<const std::pair<std::string, Tensor>*> sorted;
  for (const auto& entry : file.tensors) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const auto& [name, tensor] = *sorted[i];
    if (name == kSafetensorsMetadataKey) {
      return absl::InvalidArgumentError(
          "SerializeSafetensors: a tensor may not be named \"__metadata__\"");
    }
    if (i > 0 && sorted[i - 1]->first == name) {
      return absl::InvalidArgumentError(
          absl::StrCat("SerializeSafetensors: two tensors are named ", QuotedText(name)));
    }
    if (i > 0) header += ',';
    DAGRAD_RETURN_IF_ERROR(AppendJsonString(name, "tensor name", header));
    absl::StrAppend(&header, ":{\"dtype\":\"", SafetensorsDTypeName(tensor.dtype()),
                    "\",\"shape\":[", absl::StrJoin(tensor.shape().dims(), ","),
                    "],\"data_offsets\":[", offset, ",", offset + tensor.nbytes(), "]}");
    offset += tensor.nbytes();
  }
  if (!file.metadata.empty()) {
    absl::StrAppend(&header, sorted.empty() ? "" : ",", "\"__metadata__\":{");
    bool first = true;
    for (const auto& [key, value] : file.metadata) {
      if (!first) header += ',';
      first = false;
      DAGRAD_RETURN_IF_ERROR(AppendJsonString(key, "metadata key", header));
      header += ':';
      DAGRAD_RETURN_IF_ERROR(AppendJsonString(value, "metadata value", header));
    }
    header += '}';
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SerializeSafetensors: the header would be ", header.size(),
        " bytes, above the readers' limit of ", kMaxSafetensorsHeaderBytes));
  }
  std::string out;
  out.reserve(8 + header.size() + offset);
  const uint64_t n = header.size();
  out.append(reinterpret_cast<const char*>(&n), 8);
  out += header;
  for (const auto* entry : sorted) {
    const Tensor& t = entry->second;
    if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

absl::Status WriteSafetensors(const std::string& path, const SafetensorsFile& file) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(file));
  return WriteFileAtomically(path, bytes);
}

}  // namespace dagrad
