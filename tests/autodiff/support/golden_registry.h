// tests/autodiff/support/golden_registry.h
//
// The dagrad side of the PyTorch goldens (tests/support/golden.h), keyed in
// the op's case file (tests/<family>_cases.cc) beside its OpCase: each
// golden case of tools/goldens/*.py, by golden file and case name, maps to
// the dagrad builder it checks, with its op attributes read from the case
// so the two sides cannot drift. tests/autodiff/golden_ops_test.cc runs them all and
// fails for a case without a builder, a builder without a case, or a name
// registered twice.
//
//   DAGRAD_GOLDENS("basic_ops", {"neg", G(Neg(in.at("x")))},
//                               {"pow_square", G(Pow(in.at("x"), attrs["exponent"]))});

#ifndef DAGRAD_TESTS_SUPPORT_GOLDEN_REGISTRY_H_
#define DAGRAD_TESTS_SUPPORT_GOLDEN_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/dtype.h"
#include "engine/graph.h"
#include "nlohmann/json.hpp"
#include "tests/autodiff/support/op_case.h"

namespace dagrad::testing {

using GoldenInputs = std::map<std::string, Value>;

// A builder over `g` (the graph), `in` (the case's inputs by name) and
// `attrs` (its attributes), and the tolerances of float32 outputs.
struct GoldenBuilder {
  std::function<Value(Graph& g, const GoldenInputs& in, const nlohmann::json& attrs)> build;
  double rtol = 1e-5, atol = 1e-6;
};
using GoldenBuilders = std::vector<std::pair<std::string, GoldenBuilder>>;

// The registered builders by golden file and case name, and the names
// registered more than once ("file/name").
struct GoldenRegistry {
  std::map<std::string, std::map<std::string, GoldenBuilder>> files;
  std::vector<std::string> duplicates;
};
inline GoldenRegistry& Goldens() {
  static auto* const registry = new GoldenRegistry();
  return *registry;
}

// RegisterGoldens adds `builders` to golden file `file`'s.
inline bool RegisterGoldens(const std::string& file, GoldenBuilders builders) {
  GoldenRegistry& r = Goldens();
  for (auto& [name, builder] : builders) {
    if (!r.files[file].emplace(name, std::move(builder)).second) {
      r.duplicates.push_back(file + "/" + name);
    }
  }
  return true;
}

// GoldenInts reads an integer list attribute; GoldenDType a dtype's name.
inline std::vector<int64_t> GoldenInts(const nlohmann::json& j) {
  return j.get<std::vector<int64_t>>();
}
inline DType GoldenDType(const nlohmann::json& attrs) {
  return *DTypeFromName(attrs["dtype"].get<std::string>());
}

}  // namespace dagrad::testing

// G wraps a builder expression over `g`, `in` and `attrs`; GT also sets the
// float32 tolerances.
#define G(expr)                                                                             \
  ::dagrad::testing::GoldenBuilder {                                                        \
    [](::dagrad::Graph& g, const ::dagrad::testing::GoldenInputs& in,                       \
       const nlohmann::json& attrs) -> ::dagrad::Value { return expr; }                     \
  }
#define GT(expr, rtol, atol)                                                                \
  ::dagrad::testing::GoldenBuilder {                                                        \
    [](::dagrad::Graph& g, const ::dagrad::testing::GoldenInputs& in,                       \
       const nlohmann::json& attrs) -> ::dagrad::Value { return expr; }, rtol, atol         \
  }

// DAGRAD_GOLDENS(file, {name, G(...)}, ...) registers builders of golden
// file `file` (tests/data/goldens/<file>.json) when the program starts.
#define DAGRAD_GOLDENS(file, ...)                                                  \
  static const bool DAGRAD_OP_CASE_CONCAT_(dagrad_goldens_, __COUNTER__) =         \
      ::dagrad::testing::RegisterGoldens(file, ::dagrad::testing::GoldenBuilders{__VA_ARGS__})

#endif  // DAGRAD_TESTS_SUPPORT_GOLDEN_REGISTRY_H_
