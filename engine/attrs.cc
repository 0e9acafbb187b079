#include "engine/attrs.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dagrad {

Attrs& Attrs::Set(absl::string_view name, AttrValue v) {
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), name,
      [](const auto& e, absl::string_view n) { return e.first < n; });
  if (it != entries_.end() && it->first == name) {
    it->second = std::move(v);
  } else {
    entries_.insert(it, {std::string(name), std::move(v)});
  }
  return *this;
}

const AttrValue* Attrs::Find(absl::string_view name) const {
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), name,
      [](const auto& e, absl::string_view n) { return e.first < n; });
  return it != entries_.end() && it->first == name ? &it->second : nullptr;
}

int64_t Attrs::GetInt(absl::string_view name, int64_t fallback) const {
  const AttrValue* v = Find(name);
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v)
                                                  : fallback;
}

double Attrs::GetFloat(absl::string_view name, double fallback) const {
  const AttrValue* v = Find(name);
  return v && std::holds_alternative<double>(*v) ? std::get<double>(*v)
                                                 : fallback;
}

bool Attrs::GetBool(absl::string_view name, bool fallback) const {
  const AttrValue* v = Find(name);
  return v && std::holds_alternative<bool>(*v) ? std::get<bool>(*v) : fallback;
}

std::string Attrs::GetStr(absl::string_view name, std::string fallback) const {
  const AttrValue* v = Find(name);
  return v && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v)
                                                      : fallback;
}

std::vector<int64_t> Attrs::GetInts(absl::string_view name) const {
  const AttrValue* v = Find(name);
  return v && std::holds_alternative<std::vector<int64_t>>(*v)
             ? std::get<std::vector<int64_t>>(*v)
             : std::vector<int64_t>();
}

namespace {

struct AttrFormatter {
  std::string operator()(int64_t v) const { return absl::StrCat(v); }
  std::string operator()(double v) const { return absl::StrFormat("%.9g", v); }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(const std::string& v) const { return v; }
  std::string operator()(const std::vector<int64_t>& v) const {
    return absl::StrCat("[", absl::StrJoin(v, ","), "]");
  }
};

}  // namespace

std::string Attrs::ToString() const {
  return absl::StrJoin(entries_, ", ", [](std::string* out, const auto& e) {
    absl::StrAppend(out, e.first, "=", std::visit(AttrFormatter(), e.second));
  });
}

}  // namespace dagrad
