// engine/attrs.h
//
// Attrs: the static attributes of an op node (an axis, a probability, a
// flag, a permutation). They are a small sorted map from name to value, so
// that every node can be printed (DOT labels), compared and hashed (common
// subexpression elimination) without knowing its op.
//
//   Attrs a = Attrs().Int("axis", -1).Bool("keepdims", true);
//   a.GetInt("axis");      // -1
//   a.ToString();          // "axis=-1, keepdims=true"

#ifndef DAGRAD_ENGINE_ATTRS_H_
#define DAGRAD_ENGINE_ATTRS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"

namespace dagrad {

using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

class Attrs {
 public:
  Attrs& Int(absl::string_view name, int64_t v) { return Set(name, v); }
  Attrs& Float(absl::string_view name, double v) { return Set(name, v); }
  Attrs& Bool(absl::string_view name, bool v) { return Set(name, v); }
  Attrs& Str(absl::string_view name, std::string v) {
    return Set(name, std::move(v));
  }
  Attrs& Ints(absl::string_view name, std::vector<int64_t> v) {
    return Set(name, std::move(v));
  }

  bool Has(absl::string_view name) const { return Find(name) != nullptr; }

  // Getters return `fallback` when the attribute is absent. Asking for the
  // wrong type is a programming error inside an op and returns the fallback.
  int64_t GetInt(absl::string_view name, int64_t fallback = 0) const;
  double GetFloat(absl::string_view name, double fallback = 0) const;
  bool GetBool(absl::string_view name, bool fallback = false) const;
  std::string GetStr(absl::string_view name, std::string fallback = "") const;
  std::vector<int64_t> GetInts(absl::string_view name) const;

  // ToString returns "name=value, ..." in name order; floats print with
  // enough digits to round-trip.
  std::string ToString() const;

  const std::vector<std::pair<std::string, AttrValue>>& entries() const {
    return entries_;
  }
  friend bool operator==(const Attrs& a, const Attrs& b) {
    return a.entries_ == b.entries_;
  }

 private:
  Attrs& Set(absl::string_view name, AttrValue v);
  const AttrValue* Find(absl::string_view name) const;

  std::vector<std::pair<std::string, AttrValue>> entries_;  // sorted by name
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_ATTRS_H_
