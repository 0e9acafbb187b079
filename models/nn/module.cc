#include "models/nn/module.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dagrad::nn {

absl::Status ValidatePrefix(absl::string_view layer, absl::string_view prefix) {
  for (absl::string_view segment : absl::StrSplit(prefix, '/')) {
    if (segment.empty() || absl::StrContains(segment, '.')) {
      return absl::InvalidArgumentError(absl::StrCat(
          layer, " prefix '", prefix,
          "': need non-empty segments separated by '/', without '.'"));
    }
  }
  return absl::OkStatus();
}

NamedParameters RelativeNames(absl::string_view scope, absl::Span<const Value> parameters) {
  NamedParameters named;
  const size_t skip = scope.empty() ? 0 : scope.size() + 1;  // "scope/"
  for (const Value& p : parameters) {
    if (p.is_null()) continue;
    std::string name = p.path().substr(std::min(skip, p.path().size()));
    std::replace(name.begin(), name.end(), '/', '.');
    named.emplace_back(std::move(name), p);
  }
  return named;
}

absl::Status FirstError(absl::Span<const Value> values) {
  for (const Value& v : values) {
    if (!v.is_null() && !v.ok()) return v.status();
  }
  return absl::OkStatus();
}

Value NotCreated(Value x, absl::string_view layer) {
  if (!x.ok()) return x;
  return x.graph()->Error(absl::FailedPreconditionError(
      absl::StrCat(layer, " applied before Create gave it its parameters")));
}

std::vector<Value> ConcatParameters(std::initializer_list<std::vector<Value>> lists) {
  std::vector<Value> all;
  for (const std::vector<Value>& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

absl::Status CheckLayersSaved(const SafetensorsFile& checkpoint, absl::string_view path,
                              absl::string_view layer_prefix, int64_t layers) {
  const std::string last = absl::StrCat(layer_prefix, layers - 1, ".");
  for (const auto& [name, tensor] : checkpoint.tensors) {
    if (absl::StartsWith(name, last)) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": the metadata says layers=", layers,
                                                 ", but the file holds no tensor ", last, "*"));
}

}  // namespace dagrad::nn
